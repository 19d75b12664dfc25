"""The memories admin is a window, not a door: no scope, tier or expiry edit (those go through the
services, which write an audit row) and no hard delete (forgetting keeps the receipt)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory, MemoryAudit

pytestmark = pytest.mark.django_db


@pytest.fixture
def fact(make_memory):
    return make_memory(body="Prefers tea to coffee", expires_at=timezone.now() + timedelta(days=90))


def test_the_change_page_shows_the_memory_but_offers_no_field_to_edit(admin_client, fact):
    page = admin_client.get(f"/admin/memories/memory/{fact.pk}/change/")
    assert page.status_code == 200  # positive control: the steward of the site can read it
    html = page.content.decode()
    assert "Prefers tea to coffee" in html
    for field in ("scope", "scope_ref", "tier", "expires_at", "pinned"):
        assert f'name="{field}"' not in html, field
    assert 'name="_save"' not in html


def test_a_posted_change_of_scope_tier_or_expiry_is_refused_and_changes_nothing(admin_client, fact):
    before = Memory.objects.values().get(pk=fact.pk)
    audits = MemoryAudit.objects.count()
    response = admin_client.post(
        f"/admin/memories/memory/{fact.pk}/change/",
        {"scope": "workspace", "scope_ref": "", "tier": "note", "expires_at_0": "2099-01-01", "expires_at_1": "00:00"},
    )
    assert response.status_code == 403
    assert Memory.objects.values().get(pk=fact.pk) == before
    assert MemoryAudit.objects.count() == audits


def test_no_hard_delete_by_page_or_by_action(admin_client, fact):
    listing = admin_client.get("/admin/memories/memory/")
    assert listing.status_code == 200 and "Prefers tea to coffee" in listing.content.decode()
    assert "delete_selected" not in listing.content.decode()
    assert admin_client.get(f"/admin/memories/memory/{fact.pk}/delete/").status_code == 403
    response = admin_client.post(
        "/admin/memories/memory/", {"action": "delete_selected", "_selected_action": [str(fact.pk)], "post": "yes"}
    )
    assert response.status_code in (200, 302)
    assert Memory.objects.filter(pk=fact.pk).exists()
