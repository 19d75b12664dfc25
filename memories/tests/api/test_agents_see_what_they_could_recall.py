"""Seeing follows recall for agents: a list or a read names the place the agent serves and shows only what it
could recall there. Persons' views are unchanged."""

from __future__ import annotations

import pytest

from memories.tests.api.conftest import recorded
from memories.tests.api.helpers import recall, remember


@pytest.fixture
def dm_with_max(org, second_member):
    return recorded(org, {"channel": "D-max", "kind": "dm", "people": [second_member.username]})


@pytest.fixture
def facts(agent_api, dm_with_mona, dm_with_max, general, private_team) -> dict[str, str]:
    said = {
        "mona": remember(agent_api, dm_with_mona, "Mona's birthday is in May"),
        "max": remember(agent_api, dm_with_max, "Max's doctor is Dr Who"),
        "general": remember(agent_api, general, "Lunch is at noon"),
        "team": remember(agent_api, private_team, "The team ships on Friday"),
    }
    assert all(answer.status_code == 201 for answer in said.values())
    return {name: answer.json()["id"] for name, answer in said.items()}


def listed(client, place: str) -> set[str]:
    answer = client.get("/api/v1/memories", {"place": place})
    assert answer.status_code == 200, answer.content
    return {row["id"] for row in answer.json()["results"]}


def test_an_agent_list_or_read_without_a_place_is_refused_naming_place(agent_api, facts):
    for answer in (agent_api.get("/api/v1/memories"), agent_api.get(f"/api/v1/memories/{facts['mona']}")):
        assert answer.status_code == 400 and list(answer.json()["fields"]) == ["place"]


def test_an_agent_sees_in_a_place_exactly_what_recall_could_return_there(agent_api, facts, dm_with_mona):
    assert listed(agent_api, "D-mona") == {facts["mona"]}
    assert listed(agent_api, "C-general") == {facts["general"]}
    assert listed(agent_api, "G-team") == {facts["team"]}
    # The same rows as recall's own rule in that place.
    answer = recall(agent_api, dm_with_mona, "", limit=40)
    assert answer.status_code == 200, answer.content
    recalled = answer.json()["results"]
    assert {row["id"] for row in recalled} == listed(agent_api, "D-mona")


def test_another_persons_dm_fact_is_not_read_from_another_place(agent_api, facts):
    for place in ("D-mona", "C-general", "G-team"):
        assert agent_api.get(f"/api/v1/memories/{facts['max']}", {"place": place}).status_code == 404
    # The positive control: in the DM with max it is read.
    assert agent_api.get(f"/api/v1/memories/{facts['max']}", {"place": "D-max"}).status_code == 200


def test_a_place_without_a_record_reads_as_a_channel_nobody_is_in(agent_api, facts, make_memory):
    shared = make_memory(body="Shared workspace fact")
    assert listed(agent_api, "C-nowhere") == {str(shared.pk)}  # what recall would give a channel of that id
    assert agent_api.get("/api/v1/memories", {"place": "bad/channel"}).status_code == 400


def test_a_persons_view_is_unchanged_and_needs_no_place(member_api, facts):
    answer = member_api.get("/api/v1/memories")
    assert answer.status_code == 200
    assert {row["id"] for row in answer.json()["results"]} == {facts["mona"], facts["general"], facts["team"]}
