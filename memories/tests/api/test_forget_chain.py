"""Forgetting any version of a corrected memory forgets every version, with a receipt per row."""

from __future__ import annotations

import pytest
from django.test import Client

from memories.models import Memory, MemoryAudit
from memories.tests.api.helpers import remember


def corrected_three_times(client, place):
    first = remember(client, place, "Door code is 1111").json()["id"]
    second = client.post(
        f"/api/v1/memories/{first}/supersede", {"body": "Door code is 2222", "place": place}, format="json"
    )
    third = client.post(
        f"/api/v1/memories/{second.json()['id']}/supersede",
        {"body": "Door code is 3333", "place": place},
        format="json",
    )
    assert second.status_code == third.status_code == 201
    return [first, second.json()["id"], third.json()["id"]]


@pytest.mark.parametrize("which", [0, 1, 2], ids=["oldest", "middle", "newest"])
def test_forgetting_any_version_forgets_the_whole_chain_with_a_receipt_per_row(agent_api, dm_with_mona, which):
    chain = corrected_three_times(agent_api, dm_with_mona)
    response = agent_api.delete(
        f"/api/v1/memories/{chain[which]}", {"reason": "asked", "place": dm_with_mona}, format="json"
    )
    assert response.status_code == 200, response.content
    receipt = response.json()["receipt"]
    assert receipt["versions"] == 3 and receipt["versions_erased_now"] == 3
    rows = Memory.objects.filter(pk__in=chain)
    assert all(row.redacted_at is not None and row.body == "" and row.embedding is None for row in rows)
    assert MemoryAudit.objects.filter(memory_id__in=chain, action=MemoryAudit.Action.REDACT).count() == 3
    for memory_id in chain:
        later = agent_api.get(f"/api/v1/memories/{memory_id}", {"place": "D-mona"})
        assert later.status_code == 410 and "Door code" not in later.content.decode()
    listed = agent_api.get("/api/v1/memories", {"place": "D-mona"}).content.decode()
    assert "Door code" not in listed


def test_a_memory_never_corrected_is_one_version(agent_api, dm_with_mona):
    single = remember(agent_api, dm_with_mona, "Likes tea").json()["id"]
    kept = remember(agent_api, dm_with_mona, "Likes cake").json()["id"]
    receipt = agent_api.delete(f"/api/v1/memories/{single}", {"place": dm_with_mona}, format="json").json()["receipt"]
    assert receipt["versions"] == 1
    assert Memory.objects.get(pk=kept).redacted_at is None  # the positive control: nothing else went


def test_the_page_says_how_many_versions_it_will_forget_and_then_forgot(member, member_api, dm_with_mona):
    chain = corrected_three_times(member_api, dm_with_mona)
    page = Client()
    page.force_login(member)
    # The page changes the current version; forgetting it forgets the earlier two as well, and says so first.
    confirm = page.get(f"/me/memories/{chain[2]}/forget").content.decode()
    assert "This memory has 3 versions" in confirm and "Forget all 3 versions" in confirm
    done = page.post(f"/me/memories/{chain[2]}/forget", {"reason": "wrong code"}, follow=True)
    assert done.status_code == 200 and "all 3 of its versions are erased" in done.content.decode()
    assert not Memory.objects.filter(pk__in=chain, redacted_at__isnull=True).exists()
