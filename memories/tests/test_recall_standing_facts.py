"""memories.recall.standing: which facts are standing instructions or preferences, told by their text."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memories.models import SourceKind
from memories.recall.standing import _STANDING, is_standing


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


# Text built from the pattern's own words, in any case, with the letters Python's IGNORECASE matches to ASCII ones
# (İ ı ſ K) and other non-ASCII letters, so both answers occur.
_PIECES = st.sampled_from(
    [
        "(asked by ",
        "mona",
        ")",
        "always",
        "never",
        "whenever",
        "from now on",
        "prefers",
        "preference",
        "would rather",
        "likes it when",
        "please ",
        "tea",
        " ",
        ".",
        "\u0130",
        "\u0131",
        "\u017f",
        "\u212a",
        "é",
        "ß",
        "\u00a0",
    ]
)


@given(
    st.lists(st.one_of(_PIECES, st.text(max_size=3)), max_size=8), st.sampled_from(["lower", "upper", "title", "same"])
)
@example(["(a\u017fked by mona)"], "same")  # long s: IGNORECASE matches it to s, lower() keeps it
@example(["mona l\u0131kes it when"], "same")  # dotless i, likewise
@example(["PREFERENCE: tea"], "same")  # upper case: the shortcut's words are lower case
def test_the_shortcut_answers_as_the_pattern_alone(pieces, case):
    """`is_standing` skips the pattern for a body without any word it needs; that must never change its answer."""
    body = "".join(pieces)
    body = body if case == "same" else getattr(body, case)()
    expected = _STANDING.search(body.strip().rstrip(".")) is not None
    assert is_standing(body=body, source_kind=SourceKind.MESSAGE) is expected
