"""`mode: contextual`: neighbours in the same place lift the answer, and never cross a scope, an agent or a tenant."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from memories.recall import contextual
from memories.tests.api.helpers import recall, remember


def bodies(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["body"] for row in response.json()["results"]]


PROMPT = "Max: what have you been researching lately?"
ANSWER = "Mona: adoption agencies, mostly."
QUESTION = "What has been researched lately?"


def fillers(client, place, count=6):
    for index in range(count):
        remember(client, place, f"Max: the kettle {index} needs descaling")


def test_the_turn_after_a_matching_one_is_recalled_with_it(agent_api, general):
    remember(agent_api, general, PROMPT)
    remember(agent_api, general, ANSWER)
    fillers(agent_api, general)
    assert ANSWER not in bodies(recall(agent_api, general, QUESTION, mode="lexical"))
    response = recall(agent_api, general, QUESTION, mode="contextual")
    found = bodies(response)
    assert found[:2] == [PROMPT, ANSWER]
    ranking = response.json()["ranking"]
    assert ranking["requested"] == "contextual" and ranking["used"] == "contextual"
    assert ranking["contextual"]["lexical"].startswith("BM25")
    assert response.json()["results"][1]["rank"]["lexical_rank"] is None  # found as a neighbour only


def test_a_neighbour_is_only_a_fact_recallable_here(
    agent_api, second_agent_api, general, dm_with_mona, make_memory, other_org
):
    remember(agent_api, general, PROMPT)
    # Written between the two turns, each where this recall may not look.
    remember(agent_api, {"channel": "C-other", "kind": "public", "people": []}, "Max: budget is secret")
    remember(agent_api, dm_with_mona, "Mona: my salary is private")
    remember(second_agent_api, general, "Max: the other agent's note")
    make_memory(organisation=other_org, owner=None, written_by=None, body="Globex: their roadmap")
    remember(agent_api, general, ANSWER)
    found = bodies(recall(agent_api, general, QUESTION, mode="contextual", limit=40))
    assert found[:2] == [PROMPT, ANSWER]
    assert set(found) == {PROMPT, ANSWER}


def test_contextual_recall_needs_a_question_and_says_so(agent_api, general):
    remember(agent_api, general, PROMPT)
    data = recall(agent_api, general, "", mode="contextual").json()
    assert data["ranking"]["used"] == "recent" and "No question" in data["notice"]


def test_contextual_recall_without_an_embedder_ranks_by_words_and_says_so(agent_api, general):
    remember(agent_api, general, PROMPT)
    data = recall(agent_api, general, QUESTION, mode="contextual").json()
    assert data["ranking"]["used"] == "contextual" and data["ranking"]["lists"] == ["lexical"]
    assert "No embedder is configured" in data["notice"]


def test_pinned_facts_still_come_first(agent_api, general):
    remember(agent_api, general, "Parking is behind the office", pinned=True)
    remember(agent_api, general, PROMPT)
    remember(agent_api, general, ANSWER)
    found = bodies(recall(agent_api, general, QUESTION, mode="contextual"))
    assert found[0] == "Parking is behind the office"
    assert found[1:3] == [PROMPT, ANSWER]


def test_contextual_recall_respects_the_limit(agent_api, general):
    for index in range(15):
        remember(agent_api, general, f"Max: research note {index}")
    assert len(bodies(recall(agent_api, general, "research", mode="contextual", limit=4))) == 4


def test_a_tenant_larger_than_the_statistics_sample_still_ranks_the_rare_word_first(agent_api, general, monkeypatch):
    from memories.recall import contextual

    monkeypatch.setattr(contextual, "STATISTICS_SAMPLE", 3)
    for index in range(8):
        remember(agent_api, general, f"Max: the kettle {index} is by the kettle shelf")
    remember(agent_api, general, "Max: the lighthouse kettle")
    found = bodies(recall(agent_api, general, "lighthouse kettle", mode="contextual"))
    assert found[0] == "Max: the lighthouse kettle"


@pytest.mark.django_db
def test_the_question_lexeme_counts_read_from_a_cut_tsvector_match_postgresql():
    # Ranking reads term frequencies from the text form of a tsvector cut to the question's lexemes:
    # quotes and backslashes are escaped there, a lexeme may carry no positions (it counts once).
    literal = "'don''t':1,4 'a\\\\b':2,3,5B 'plain'"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT v::text, (SELECT jsonb_object_agg(lexeme, coalesce(array_length(positions, 1), 1))::text"
            " FROM unnest(v)) FROM (SELECT %s::tsvector AS v) t",
            [literal],
        )
        printed, expected = cursor.fetchone()
    expected = json.loads(expected)
    assert contextual.lexeme_counts(printed) == expected
    assert expected == {"don't": 2, "a\\b": 3, "plain": 1}


def test_of_two_people_named_the_subject_of_the_question_is_recalled_first(agent_api, general):
    gina = "Gina: the new store looks great"
    jon = "Jon: the new store looks great"
    remember(agent_api, general, gina)
    remember(agent_api, general, jon)
    fillers(agent_api, general)
    assert bodies(recall(agent_api, general, "What did Jon say about Gina's new store?", mode="contextual"))[0] == jon
    assert bodies(recall(agent_api, general, "What did Gina say about Jon's new store?", mode="contextual"))[0] == gina


@pytest.mark.django_db
def test_a_transcript_lines_label_is_its_tsvectors_opening_lexeme_as_postgresql_prints_it():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT to_tsvector('english', %s)::text, to_tsvector('english', %s)::text",
            ["Caroline: I painted the lake, Caroline said", "I painted the lake"],
        )
        labelled, unlabelled = cursor.fetchone()
    assert contextual.opening_lexeme(labelled) == "carolin"
    assert contextual.opening_lexeme(unlabelled) is None  # 'paint' is at 2: "I" is a stop word
    assert contextual.opening_lexeme("'paint':2 'carolin':1A,7") == "carolin"
