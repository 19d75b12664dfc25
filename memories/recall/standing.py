"""Standing instructions and preferences among recalled facts: how a person asked to be answered from now on,
and what they prefer, which a later request needs whatever words it uses."""

# Told by their text, so a fact an agent wrote through the API ("User prefers short answers") counts as one
# learned from a thread does ("Always cite sources (asked by mona)", "mona prefers tea"). Transcript lines
# are not: a line that mentions a preference in passing is not one.

from __future__ import annotations

import re

from memories.models import SourceKind

_STANDING = re.compile(
    r"\(asked by [^()]+\)$"
    r"|^(?:please\s+)?(?:always|never|from now on|whenever)\b"
    r"|\b(?:prefers?|preference|would rather|likes it when)\b",
    re.IGNORECASE,
)


def is_standing(*, body: str, source_kind: str) -> bool:
    """Whether a fact is a standing instruction or a preference."""
    return source_kind != SourceKind.EPISODE and _STANDING.search(body.strip().rstrip(".")) is not None
