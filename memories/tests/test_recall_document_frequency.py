"""Issue 15, round six: BM25's document frequencies in the contextual statement are counted per question word
(a fact holds the word when deleting it shortens the fact's tsvector); they are what a plain count in Python
over the same facts gives: for each word of the question, how many of the place's recallable facts hold it,
however often each holds it, over the one read of the place and over the table alike."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from accounts.services import organisation_create
from memories.models import BODY_MAX_CHARS, Memory
from memories.scopes import Place
from memories.tests.recall_plans import contextual_plan
from memories.tests.test_recall_bm25_statistics import fact, statistics

PLACE = Place("c1", "public", ())
# A hyphenated word gives three lexemes (the whole and its parts); a possessive and a plural stem as well.
QUESTION = "Did the gardener plant tulips with her mother-in-law's help?"
PLACE_BODIES = (
    "garden garden garden: tulips, tulips and more tulips",
    "the gardener's mother-in-law planted them",
    "plants and plans",
    "her help with the law exam",
    "nothing of the sort here",
    "Tulip bulbs, planted by the gardener, planted twice",
    # A fact as long as a body may be, its tsvector kept compressed in the row (TOAST): read the same.
    ("the garden journal: " + " ".join(f"entry{number} tulips" for number in range(200)))[:BODY_MAX_CHARS],
)
# Facts holding the question's words that are not the place's recallable facts.
EXCLUDED = {
    "another channel's garden tulips": {"scope_ref": "c2"},
    "an expired mother-in-law plant": {"expires_in": -1},
}


@pytest.fixture
def tenant(db):
    org = organisation_create(slug="document-frequency")
    other = organisation_create(slug="document-frequency-other")
    rows = [fact(org, body, minutes_ago=index) for index, body in enumerate(PLACE_BODIES)]
    rows += [fact(org, body, minutes_ago=0, **extra) for body, extra in EXCLUDED.items()]
    rows.append(fact(other, "the other tenant's gardener planted tulips", minutes_ago=0))
    Memory.objects.bulk_create(rows)
    return org


def tsvector_texts(bodies) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT search_vector::text FROM memories_memory WHERE body = ANY(%s)", [list(bodies)])
        return [text for (text,) in cursor.fetchall()]


def question_lexemes() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT lexeme FROM unnest(to_tsvector('english', %s))", [QUESTION])
        return {lexeme for (lexeme,) in cursor.fetchall()}


def positions(tsvector_text: str) -> dict[str, int]:
    """Each lexeme of a tsvector's text form and how many positions it has (these hold no quotes)."""
    return {lexeme: len(places.split(",")) for lexeme, places in re.findall(r"'([^']+)':([0-9A-D,]+)", tsvector_text)}


def counted_in_python(bodies) -> dict[str, int]:
    """For each word of the question, how many of these facts hold it."""
    words, facts = question_lexemes(), [positions(text) for text in tsvector_texts(bodies)]
    counts = {word: sum(word in held for held in facts) for word in words}
    return {word: count for word, count in counts.items() if count}


def statement_frequencies(org, *, shared_read: bool) -> dict[str, int]:
    sampled, _, _, frequency = statistics(
        org, contextual_plan(org, place=PLACE, question=QUESTION, shared_read=shared_read)
    )
    assert sampled == len(PLACE_BODIES)
    return frequency


@pytest.mark.parametrize("shared_read", [True, False], ids=["one read of the place", "over the table"])
def test_document_frequencies_are_a_plain_count_over_the_places_facts(tenant, shared_read):
    expected = counted_in_python(PLACE_BODIES)
    assert statement_frequencies(tenant, shared_read=shared_read) == expected
    # The words are the stems, the hyphenated whole and its parts: `mother-in-law`, `mother` and `law` each.
    assert expected == {"garden": 4, "tulip": 3, "plant": 3, "mother-in-law": 1, "mother": 1, "law": 2, "help": 1}


def test_the_long_facts_tsvector_is_stored_compressed(tenant):
    """Control: the long fact exercises a tsvector read back from TOAST."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_compression(search_vector) FROM memories_memory WHERE body = %s", [PLACE_BODIES[-1]]
        )
        assert cursor.fetchone()[0] is not None


def test_the_count_is_of_facts_and_of_the_places_facts_only(tenant):
    """Controls: the fixture tells a count of facts from a count of occurrences, and the place's facts
    from every fact holding the words, so the test above catches either mistake."""
    expected = counted_in_python(PLACE_BODIES)
    occurrences: dict[str, int] = {}
    for text in tsvector_texts(PLACE_BODIES):
        for lexeme, count in positions(text).items():
            if lexeme in expected:
                occurrences[lexeme] = occurrences.get(lexeme, 0) + count
    assert occurrences != expected  # `garden` three times in one fact, `tulip` three and `plant` twice in others
    assert counted_in_python((*PLACE_BODIES, *EXCLUDED)) != expected
