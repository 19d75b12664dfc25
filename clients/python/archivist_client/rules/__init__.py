"""The server's own text rules and block shape, shipped byte for byte so a client's block cannot drift.

`text.py` and `fenced_block.py` are copies of the server's `lib/text.py` and `lib/fenced_block.py`; the
repository's test `clients/mcp/tests/test_every_block_is_renders.py` fails when either differs (and when
recall, the MCP tools or the Anthropic backend lay a fact out otherwise than render). Change the server's
files, then copy them here.
"""
