"""The `rules` extractor on standing instructions ("always …", "whenever I ask …, …") and preferences stated
inside longer sentences, on a labelled list written for the purpose, with ordinary sentences beside them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from threads.extractors.base import ABOUT_AUTHOR, EventView
from threads.extractors.rules import RulesExtractor

LABELLED = Path(__file__).parent / "fixtures" / "standing_labelled.json"
MONA = "7d2f5c9e-0b3c-4c1a-a1a2-2f3b4c5d6e7f"


def learn(text: str, *, role: str = "user", author_id: str | None = MONA):
    return RulesExtractor().extract([EventView(sequence=1, role=role, author="mona", author_id=author_id, text=text)])


@pytest.mark.parametrize(
    ("text", "body"),
    [
        ("Always answer in British English.", "Always answer in British English (asked by mona)"),
        (
            "Please always cite the page when you quote the manual.",
            "Always cite the page when the agent quotes the manual (asked by mona)",
        ),
        ("Don't ever use emojis.", "Never use emojis (asked by mona)"),
        (
            "Whenever I ask about recipes, list the ingredients first.",
            "Whenever mona asks about recipes, list the ingredients first (asked by mona)",
        ),
        ("I'd like you to always show the command first.", "Always show the command first (asked by mona)"),
        ("In future, please reply in bullet points.", "From now on, reply in bullet points (asked by mona)"),
        (
            "I'm building a small app, so I prefer libraries with few dependencies, what would you use?",
            "mona prefers libraries with few dependencies",
        ),
        ("I like it when you ask questions first.", "mona likes it when the agent asks questions first"),
    ],
)
def test_a_standing_instruction_or_preference_is_a_profile_fact_about_its_speaker(text, body):
    found = learn(text)
    assert [candidate.body for candidate in found] == [body]
    assert (found[0].about, found[0].author_id, found[0].tier) == (ABOUT_AUTHOR, MONA, "profile")
    assert not found[0].exclusive  # instructions sit side by side; none replaces another


def test_an_instruction_is_keyed_by_what_it_asks():
    assert learn("Always answer in British English")[0].key == "instruction:always answer in british english"


def test_hit_rate_and_no_false_positives_on_the_labelled_sentences():
    data = json.loads(LABELLED.read_text())["sentences"]
    standing = [item["text"] for item in data if item["standing"]]
    ordinary = [item["text"] for item in data if not item["standing"]]
    assert len(standing) >= 30 and len(ordinary) >= 30
    caught = [text for text in standing if learn(text)]
    # Positive control and the figure reported: most standing sentences are caught.
    assert len(caught) / len(standing) >= 0.9, sorted(set(standing) - set(caught))
    assert [(text, learn(text)) for text in ordinary if learn(text)] == []
    print(
        f"standing sentences caught: {len(caught)} of {len(standing)}; ordinary sentences caught: 0 of {len(ordinary)}"
    )


def test_only_a_person_s_own_words_become_their_instructions():
    assert learn("Always answer in British English", role="assistant") == []
    assert learn("Always answer in British English", author_id=None) == []
    # Positive control: the same words from the person are kept.
    assert len(learn("Always answer in British English")) == 1


@pytest.mark.parametrize(
    "text",
    [
        "Can you always answer in British English?",
        'Always say "hello" first',
        "She said: always answer in French",
        "Suppose I prefer the cheaper plan, what changes?",
    ],
)
def test_questions_quotes_and_reported_instructions_are_left_alone(text):
    assert learn(text) == []
