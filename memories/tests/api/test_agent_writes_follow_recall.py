"""An agent's writes on a memory it holds (pin, unpin, correct, forget) follow recall, as its reads do: it names
the place of its turn (400 naming `place` without it) and reaches only a row it could recall there (404 from any
other place, the row untouched and its body never shown). A person's writes need no place."""

from __future__ import annotations

import pytest

from memories.models import Memory
from memories.tests.api.helpers import remember

WRITES = {
    "pin": ("post", "/api/v1/memories/{id}/pin", {}),
    "unpin": ("post", "/api/v1/memories/{id}/unpin", {}),
    "correct": ("post", "/api/v1/memories/{id}/supersede", {"body": "Standup moved to 10"}),
    "forget": ("delete", "/api/v1/memories/{id}", {"reason": "asked"}),
}


def state(memory_id) -> dict:
    return Memory.objects.filter(pk=memory_id).values("body", "pinned", "redacted_at", "superseded_by").get()


@pytest.mark.parametrize("write", WRITES)
def test_an_agents_write_names_its_place_and_reaches_only_what_it_could_recall_there(
    agent_api, private_team, general, dm_with_mona, write
):
    method, path, body = WRITES[write]
    fact = remember(agent_api, private_team, "Standup is at 9").json()
    if write == "unpin":
        agent_api.post(f"/api/v1/memories/{fact['id']}/pin", {"place": private_team}, format="json")
    url, before = path.format(id=fact["id"]), state(fact["id"])

    placeless = getattr(agent_api, method)(url, body, format="json")
    assert placeless.status_code == 400 and list(placeless.json()["fields"]) == ["place"], placeless.content
    for elsewhere in (general, dm_with_mona):  # it holds the fact, but could not recall it there
        response = getattr(agent_api, method)(url, {**body, "place": elsewhere}, format="json")
        assert response.status_code == 404, response.content
        assert "Standup" not in response.content.decode()
    assert state(fact["id"]) == before

    # Positive control: from the place it was said in, the write is made.
    done = getattr(agent_api, method)(url, {**body, "place": private_team}, format="json")
    assert done.status_code in (200, 201), done.content
    assert state(fact["id"]) != before


def test_a_persons_write_needs_no_place(member_api, agent_api, private_team):
    fact = remember(agent_api, private_team, "Standup is at 9").json()
    pinned = member_api.post(f"/api/v1/memories/{fact['id']}/pin", {}, format="json")
    assert pinned.status_code == 200 and pinned.json()["pinned"] is True
