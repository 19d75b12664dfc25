"""The server's own text rules and block shape, shipped byte for byte so a client's block cannot drift.

`text.py` and `fenced_block.py` are copies of the server's `lib/text.py` and `lib/fenced_block.py`; the test
`tests/test_block_rules_are_the_servers.py` fails when either differs. Change the server's files, then copy
them here.
"""
