"""GET /api/v1/memories/{id}: the row, its provenance, its chain oldest to newest, and its injections."""

from __future__ import annotations

from memories.models import Memory
from memories.services import memory_supersede
from memories.tests.api.helpers import remember, render


def test_the_detail_shows_provenance_chain_and_injections(agent_api, general, member):
    first = remember(
        agent_api,
        general,
        "Deploys on Tuesday",
        source_kind="message",
        source_ref="m-9",
        source_label="#general",
        run_id="run-5",
    ).json()
    render(agent_api, general, "turn-a")
    second = memory_supersede(memory=Memory.objects.get(pk=first["id"]), body="Deploys on Wednesday", actor=member)
    data = agent_api.get(f"/api/v1/memories/{first['id']}", {"place": "C-general"}).json()
    assert data["source"] == {"kind": "message", "ref": "m-9", "label": "#general", "run_id": "run-5"}
    assert (data["author"], data["written"], data["agent"]) == ("model", "inferred by an agent", "helper")
    assert data["state"] == "superseded" and data["superseded_by"] == str(second.pk)
    assert [row["body"] for row in data["chain"]] == ["Deploys on Tuesday", "Deploys on Wednesday"]
    assert [(use["turn_id"], use["erased"]) for use in data["injections"]] == [("turn-a", False)]


def test_a_memory_the_caller_may_not_see_is_a_404(member_api, make_memory, second_member):
    hidden = make_memory(
        body="Max's fact",
        scope="person",
        scope_ref=str(second_member.pk),
        subject_type="user",
        subject_id=str(second_member.pk),
        owner=second_member,
        written_by=second_member,
    )
    assert member_api.get(f"/api/v1/memories/{hidden.pk}").status_code == 404


def test_an_unknown_id_is_a_404(member_api):
    response = member_api.get("/api/v1/memories/00000000-0000-0000-0000-000000000000")
    assert response.status_code == 404 and response.json()["error"] == "not_found"
