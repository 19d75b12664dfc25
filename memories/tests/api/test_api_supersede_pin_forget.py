"""Correct (supersede), pin and unpin, and forget: each only where `changeable_by` allows."""

from __future__ import annotations

from memories.models import Memory, MemoryAudit
from memories.tests.api.conftest import recorded
from memories.tests.api.helpers import recall, remember


def test_supersede_writes_a_new_row_and_points_the_old_one_at_it(member_api, make_memory, org, member):
    recorded(org, {"channel": "C-x", "kind": "private", "people": [member.username]})  # mona reads C-x
    old = make_memory(body="Lives in Leeds", scope="channel", scope_ref="C-x")
    response = member_api.post(f"/api/v1/memories/{old.pk}/supersede", {"body": "Lives in York"}, format="json")
    assert response.status_code == 201, response.content
    new = response.json()
    old.refresh_from_db()
    assert old.superseded_by_id is not None and str(old.superseded_by_id) == new["id"]
    assert (new["scope"], new["scope_ref"], new["body"]) == ("channel", "C-x", "Lives in York")
    again = member_api.post(f"/api/v1/memories/{old.pk}/supersede", {"body": "Lives in Hull"}, format="json")
    assert again.status_code == 400 and "memory" in again.json()["fields"]


def test_workspace_facts_are_corrected_by_owners_only(member_api, owner_api, make_memory):
    fact = make_memory(body="Office closes at six")
    refused = member_api.post(f"/api/v1/memories/{fact.pk}/supersede", {"body": "Office closes at five"}, format="json")
    assert refused.status_code == 403
    assert (
        owner_api.post(
            f"/api/v1/memories/{fact.pk}/supersede", {"body": "Office closes at five"}, format="json"
        ).status_code
        == 201
    )


def test_an_agent_changes_a_persons_fact_only_in_the_place_it_is_recallable(
    agent_api, make_memory, member, dm_with_mona, general
):
    fact = make_memory(
        body="Mona lives in Leeds",
        scope="person",
        scope_ref=str(member.pk),
        subject_type="user",
        subject_id=str(member.pk),
    )
    url = f"/api/v1/memories/{fact.pk}/supersede"
    assert agent_api.post(url, {"body": "Mona lives in York"}, format="json").status_code == 400  # names no place
    assert agent_api.post(url, {"body": "Mona lives in York", "place": general}, format="json").status_code == 404
    response = agent_api.post(url, {"body": "Mona lives in York", "place": dm_with_mona}, format="json")
    assert response.status_code == 201 and response.json()["author"] == "model"


def test_an_agent_may_not_change_a_shared_workspace_fact(agent_api, make_memory, general):
    fact = make_memory(body="Office closes at six")
    response = agent_api.post(f"/api/v1/memories/{fact.pk}/pin", {"place": general}, format="json")
    assert response.status_code == 403


def test_pin_and_unpin_are_recorded(agent_api, general, agent):
    fact = remember(agent_api, general, "Parking is behind the office").json()
    pinned = agent_api.post(f"/api/v1/memories/{fact['id']}/pin", {"place": general}, format="json")
    assert pinned.status_code == 200 and pinned.json()["pinned"] is True
    assert recall(agent_api, general, "anything").json()["results"][0]["rank"]["pinned"] is True
    unpinned = agent_api.post(f"/api/v1/memories/{fact['id']}/unpin", {"place": general}, format="json")
    assert unpinned.json()["pinned"] is False
    actions = list(MemoryAudit.objects.filter(memory_id=fact["id"]).values_list("action", flat=True))
    assert actions == ["remember", "pin", "unpin"]


def test_forget_is_a_recorded_redaction_and_later_reads_return_the_receipt(member_api, make_memory, member):
    fact = make_memory(
        body="My door code is 1234",
        scope="person",
        scope_ref=str(member.pk),
        subject_type="user",
        subject_id=str(member.pk),
    )
    response = member_api.delete(f"/api/v1/memories/{fact.pk}", {"reason": "typed by mistake"}, format="json")
    assert response.status_code == 200, response.content
    receipt = response.json()
    assert receipt["state"] == "erased" and receipt["body"] == ""
    assert receipt["receipt"]["erased_by"] == "user:mona" and receipt["receipt"]["reason"] == "typed by mistake"
    row = Memory.objects.get(pk=fact.pk)
    assert row.body == "" and row.embedding is None and row.redacted_at is not None
    assert receipt["receipt"]["versions"] == 1 and receipt["receipt"]["versions_erased_now"] == 1
    stored = {name: receipt["receipt"][name] for name in ("erased_at", "erased_by", "reason")}
    later = member_api.get(f"/api/v1/memories/{fact.pk}").json()
    assert later["receipt"] == stored and "1234" not in str(later)
    twice = member_api.delete(f"/api/v1/memories/{fact.pk}")
    assert twice.status_code == 200 and twice.json()["receipt"] == stored


def test_forget_without_a_reason_still_leaves_a_receipt(agent_api, general):
    fact = remember(agent_api, general, "Temporary fact").json()
    receipt = agent_api.delete(f"/api/v1/memories/{fact['id']}", {"place": general}, format="json").json()["receipt"]
    assert receipt["erased_by"] == "agent:helper" and receipt["reason"] == "forgotten on request"


def test_an_erased_memory_cannot_be_pinned_or_corrected(member_api, make_memory, member, org):
    recorded(org, {"channel": "C-x", "kind": "private", "people": [member.username]})
    fact = make_memory(body="Gone soon", scope="channel", scope_ref="C-x")
    member_api.delete(f"/api/v1/memories/{fact.pk}")
    assert member_api.post(f"/api/v1/memories/{fact.pk}/pin").status_code == 400
    assert member_api.post(f"/api/v1/memories/{fact.pk}/supersede", {"body": "x"}, format="json").status_code == 400
