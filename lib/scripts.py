"""Redis Lua scripts made once: the SHA is computed at import, each call names the client that runs it."""

from __future__ import annotations

from typing import Any, cast

from redis.commands.core import Script


def unbound_script(source: str) -> Script:
    """A script bound to no client: call it with `client=` (redis-py loads it again if the server forgot it)."""
    # The client is only used to encode text; the source is given as bytes, so none is needed.
    return Script(cast(Any, None), source.encode())
