"""memories.recall.standing: which facts are standing instructions or preferences, told by their text."""

from __future__ import annotations

import pytest

from memories.models import SourceKind
from memories.recall.standing import is_standing


@pytest.mark.parametrize(
    "body",
    [
        "Always cite the page number (asked by mona)",
        "From now on, reply in French (asked by mona)",
        "When mona asks for a summary, always start with the conclusion (asked by mona)",
        "mona prefers short answers",
        "mona would rather read code than prose",
        "User prefers dark mode",
        "Never use emojis",
    ],
)
def test_instructions_and_preferences_are_standing(body):
    assert is_standing(body=body, source_kind=SourceKind.MESSAGE)


@pytest.mark.parametrize(
    "body", ["The office closes at 6", "mona lives in Lisbon", "mona's timezone is CET", "Asked by the board to wait"]
)
def test_other_facts_are_not(body):
    assert not is_standing(body=body, source_kind=SourceKind.MESSAGE)


def test_a_transcript_line_is_not_though_it_mentions_a_preference():
    assert not is_standing(body="mona: I prefer tea, but only in the morning", source_kind=SourceKind.EPISODE)
    # Positive control: the same words as a fact are.
    assert is_standing(body="mona prefers tea in the morning", source_kind=SourceKind.MESSAGE)
