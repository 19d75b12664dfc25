"""The one spelling of `Authorization` the API reads: `Bearer`, one space, the token (RFC 6750's token68).

Anything else presented on the API (a tab or two spaces after `Bearer`, a
second word, another scheme, trailing whitespace) is refused with 401 before a
view runs, rather than split on whitespace and read as a token: a header that
only looks like a Bearer token must not authenticate in one reader and be
skipped in another. The scheme's name is case-insensitive (RFC 7235).
"""

from __future__ import annotations

import re

MALFORMED_AUTHORIZATION = (
    "The Authorization header must be 'Bearer', one space, and the token; nothing else is read as credentials."
)
_BEARER = re.compile(r"(?i:bearer) ([A-Za-z0-9\-._~+/]+=*)")


def bearer_token(header: str) -> str | None:
    """The token a well-formed `Authorization` header presents, or None when the header is anything else."""
    found = _BEARER.fullmatch(header)
    return found.group(1) if found is not None else None
