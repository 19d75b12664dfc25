"""Of the asker's own facts on one matter, recall puts the newer above the older, and the older says so
(`rank.newer`), through the API."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memories.models import Memory
from memories.recall.query import recall as recall_in_process
from memories.recall.ranking import DEFAULT_CONFIG
from memories.scopes import Place
from memories.tests.api.helpers import recall, remember, stub_vector

OLDER = "My weekly word count target is 5000 words"
NEWER = "My weekly word count target went up to 7000"
QUESTION = "What is my weekly word count target?"
CHAT = [f"Lunch on day {n} was soup and bread" for n in range(4)]


def written(org) -> dict[str, Memory]:
    """The facts a month apart (the newer last), each with the stand-in's vector."""
    start = timezone.now() - timedelta(days=60)
    facts = {}
    for index, memory in enumerate(Memory.objects.filter(organisation=org).order_by("created_at")):
        when = start + timedelta(days=30 if memory.body == NEWER else 0, hours=index)
        Memory.objects.filter(pk=memory.pk).update(
            embedding=stub_vector(memory.body), embedding_model="stand-in", created_at=when
        )
        facts[memory.body] = memory
    return facts


def test_the_newer_of_the_askers_facts_on_one_matter_comes_first_and_the_older_says_so(
    org, agent_api, dm_with_mona, member, stub_embedder
):
    for body in (OLDER, *CHAT, NEWER):
        assert remember(agent_api, dm_with_mona, body).status_code == 201
    facts = written(org)
    answer = recall(agent_api, dm_with_mona, QUESTION, mode="contextual")
    assert answer.status_code == 200, answer.content
    results = answer.json()["results"]
    bodies = [row["body"] for row in results]
    assert bodies.index(NEWER) < bodies.index(OLDER)
    updated = {row["body"]: row["rank"]["newer"] for row in results}
    assert updated[OLDER] == str(facts[NEWER].pk)
    assert updated[NEWER] is None and all(updated[body] is None for body in CHAT if body in updated)

    # Positive control: without the rule nothing is marked as updated.
    place = Place("D-mona", "dm", (str(member.pk),))
    plain = recall_in_process(
        organisation=org,
        place=place,
        question=QUESTION,
        mode="contextual",
        ranking_config=DEFAULT_CONFIG.without("newer_first"),
    )
    assert {row["body"] for row in plain.rows} >= {OLDER, NEWER}
    assert all(row["newer"] is None for row in plain.rows)
