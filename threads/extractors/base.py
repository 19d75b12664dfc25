"""The extractor interface: thread events in, candidate memories out.

An extractor only proposes. Consolidation (threads.consolidation) decides where a
candidate is kept (the scope rules), whether it repeats or contradicts a live
memory, and writes it with its sources. Two extractors exist, chosen by
`ARCHIVIST_EXTRACTOR` (threads.extractors.registry): `rules`
(threads.extractors.rules, the default) and `llm` (threads.extractors.llm).
Both import this module and nothing of each other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

ABOUT_AUTHOR = "author"
ABOUT_WORKSPACE = "workspace"
CANDIDATE_MAX_CHARS = 500


@dataclass(frozen=True)
class EventView:
    """What an extractor may read of one event."""

    sequence: int
    role: str
    author: str  # the label the caller gave, e.g. a username
    author_id: str | None  # the account id, when the author is an account holder of the organisation
    text: str
    occurred_at: datetime | None = None


@dataclass(frozen=True)
class Candidate:
    """A memory an extractor proposes.

    `about` is `author` (a fact about the person who said it, `author_id`) or
    `workspace` (a fact about no one). `key` names what the fact is about, so a
    later fact with the same key can replace it: `called`, `my:timezone`,
    `prefers:tea`. `family` is the part before the colon; a `correction`
    ("actually, …") replaces the newest fact of its family. `negated` marks a
    retraction ("not X anymore"), which replaces the fact it denies.
    """

    body: str
    about: str
    key: str
    sequences: tuple[int, ...]
    author_id: str | None = None
    negated: bool = False
    correction: bool = False
    retracts: str = ""  # for a negation: the text of what is no longer true, to find the fact it denies
    tier: str = "log"
    exclusive: bool = False  # one live fact per key and subject (a name, "my timezone"): a new value replaces the old

    @property
    def family(self) -> str:
        return self.key.split(":", 1)[0]


class ExtractionError(Exception):
    """The extractor could not answer. `transient`: try again later; the watermark has not moved."""

    def __init__(self, message: str, *, transient: bool = True):
        super().__init__(message)
        self.transient = transient


class Extractor(Protocol):
    name: str

    def extract(self, events: Sequence[EventView], *, context: Sequence[EventView] = ()) -> list[Candidate]:
        """Candidates from `events`; `context` holds earlier events, already consolidated, for reference only."""


_SPACES = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s.!;,:]+$")


def normalise(text: str) -> str:
    """The comparison form of a memory: lower case, single spaces, no trailing punctuation.

    `normalised_body_sql` computes the same in PostgreSQL.
    """
    text = _SPACES.sub(" ", (text or "").replace("’", "'").lower()).strip()
    return _TRAILING.sub("", text)


def normalised_body_sql(column: str = "memories_memory.body") -> str:
    """`normalise` in PostgreSQL, over `column`."""
    quote = "''''"  # a single quote, as an SQL literal
    return (
        f"regexp_replace(btrim(regexp_replace(lower(replace({column}, '’', {quote})), '\\s+', ' ', 'g')),"
        " '[\\s.!;,:]+$', '')"
    )


_NUMBER = re.compile(r"\d+(?:[:.,]\d+)*(?:\s*(?:am|pm|%))?", re.IGNORECASE)
# Words that turn a fact into another fact while barely moving its embedding
# ("after 10am" / "before 10am" score 0.99 with all-MiniLM-L6-v2).
_CONTRASTS = {
    "before", "after", "above", "below", "more", "less", "fewer", "earlier", "later",
    "early", "late", "first", "last", "min", "minimum", "max", "maximum", "up", "down", "start", "starts",
    "end", "ends", "open", "opens", "close", "closes", "yes", "no", "not", "never", "longer", "without",
    "except", "only", "anymore", "stop", "stopped",
}  # fmt: skip


_SENTENCE_OPENERS = {
    "the", "a", "an", "on", "in", "at", "from", "for", "to", "and", "but", "this", "that", "it", "we", "our",
    "every", "each", "all", "no", "not", "when", "after", "before", "since", "until", "by",
}  # fmt: skip


def value_signature(text: str) -> tuple[frozenset, frozenset, frozenset]:
    """The parts of a fact an embedding weighs too little: numbers and times, names (capitalised
    words after the first), and contrast words. Two texts repeat each other only if these agree."""
    numbers = frozenset(re.sub(r"\s+", "", match.lower()) for match in _NUMBER.findall(text))
    words = [word.strip(".,;:!()\"'") for word in text.split()]
    if words and words[0].lower() in _SENTENCE_OPENERS:
        words = words[1:]  # capitalised only because it starts the sentence
    names = frozenset(word.lower() for word in words if word[:1].isupper())
    contrasts = frozenset(word for word in re.findall(r"[a-z]+", text.lower()) if word in _CONTRASTS)
    return numbers, names, contrasts
