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


# Words one of which `_STANDING` needs to match ("whenever" holds "never", "prefers" and "preference" "prefer"):
# a body holding none is not searched. Case-insensitive as the pattern is: the four letters Python's IGNORECASE
# also matches to ASCII ones are mapped to them first (docs.python.org, `re.IGNORECASE`).
_NEEDED = ("(asked by ", "always", "never", "from now on", "prefer", "would rather", "likes it when")
_IGNORECASE_ALIKE = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def is_standing(*, body: str, source_kind: str) -> bool:
    """Whether a fact is a standing instruction or a preference."""
    if source_kind == SourceKind.EPISODE:
        return False
    folded = (body if body.isascii() else body.translate(_IGNORECASE_ALIKE)).lower()
    for word in _NEEDED:  # the pattern's search was the costly part of ranking a row: 5 us against 0.6
        if word in folded:
            return _STANDING.search(body.strip().rstrip(".")) is not None
    return False
