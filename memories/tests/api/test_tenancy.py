"""Another organisation's rows answer 404 on every endpoint, and never reach recall or render."""

from __future__ import annotations

import pytest

from memories.models import Memory
from memories.tests.api.helpers import recall, remember, render

GENERAL = {"channel": "C-general", "kind": "public", "people": []}


@pytest.fixture
def globex_fact(outsider_agent_api, other_org):
    place = GENERAL
    remembered = remember(outsider_agent_api, place, "Globex secret about tea", scope="workspace")
    assert remembered.status_code == 201, remembered.content
    rendered = render(outsider_agent_api, place, "turn-globex")
    assert rendered.status_code == 200, rendered.content
    assert [fact["id"] for fact in rendered.json()["facts"]] == [remembered.json()["id"]]
    return remembered.json()["id"]


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("get", "/api/v1/memories/{id}?place=C-general", None),  # a place the agent may read in
        # Writes name the same place (an agent's must name one).
        ("delete", "/api/v1/memories/{id}", {"place": GENERAL}),
        ("post", "/api/v1/memories/{id}/supersede", {"body": "x", "place": GENERAL}),
        ("post", "/api/v1/memories/{id}/pin", {"place": GENERAL}),
        ("post", "/api/v1/memories/{id}/unpin", {"place": GENERAL}),
        ("get", "/api/v1/injections/turn-globex", None),
        ("post", "/api/v1/injections/turn-globex/replay", None),
    ],
)
def test_another_organisations_row_is_a_404(agent_api, owner_api, globex_fact, general, method, path, body):
    for client in (agent_api, owner_api):
        response = getattr(client, method)(path.format(id=globex_fact), body, format="json")
        assert response.status_code == 404, (path, response.content)
        assert response.json()["error"] == "not_found"
    assert Memory.objects.get(pk=globex_fact).redacted_at is None


def test_recall_render_and_list_never_return_another_tenants_rows(agent_api, owner_api, globex_fact, general):
    assert recall(agent_api, general, "tea").json()["results"] == []
    assert render(agent_api, general, "turn-acme").json()["text"] == ""
    assert agent_api.get("/api/v1/memories", {"place": "C-general"}).json()["results"] == []
    assert owner_api.get("/api/v1/memories").json()["results"] == []
    assert agent_api.get("/api/v1/subjects/candidate/x/memories").json()["count"] == 0


def test_the_same_turn_id_in_two_organisations_is_two_records(agent_api, globex_fact, general):
    assert render(agent_api, general, "turn-globex").json()["replayed"] is False
