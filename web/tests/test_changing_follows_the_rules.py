"""Correcting, pinning and forgetting are offered and allowed only where memories.scopes.changeable_by allows."""

from __future__ import annotations

from django.urls import reverse

from memories.models import Memory


def test_a_member_may_not_change_a_workspace_fact(client, member, seeded):
    client.force_login(member)
    memory = seeded.workspace
    page = client.get(reverse("web:memory-detail", args=[memory.pk])).content.decode()
    assert "Correct it" not in page and "Forget it" not in page and "Pin it" not in page
    assert "changed" in page or "owners" in page

    assert client.get(reverse("web:memory-correct", args=[memory.pk])).status_code == 403
    assert client.post(reverse("web:memory-correct", args=[memory.pk]), {"body": "Ships on Mondays"}).status_code == 403
    assert client.post(reverse("web:memory-pin", args=[memory.pk])).status_code == 403
    assert client.post(reverse("web:memory-forget", args=[memory.pk]), {"reason": "wrong"}).status_code == 403
    memory.refresh_from_db()
    assert memory.superseded_by_id is None and memory.redacted_at is None and not memory.pinned


def test_an_owner_corrects_and_forgets_a_workspace_fact(client, owner, seeded):
    client.force_login(owner)
    memory = seeded.workspace
    assert "Correct it" in client.get(reverse("web:memory-detail", args=[memory.pk])).content.decode()

    response = client.post(reverse("web:memory-correct", args=[memory.pk]), {"body": "The team ships on Tuesdays"})
    memory.refresh_from_db()
    assert memory.superseded_by.body == "The team ships on Tuesdays"
    assert response["Location"] == reverse("web:memory-detail", args=[memory.superseded_by_id])

    response = client.post(reverse("web:memory-forget", args=[memory.superseded_by_id]), {"reason": "Wrong day"})
    assert response["Location"] == reverse("web:memory-receipt", args=[memory.superseded_by_id])
    erased = Memory.objects.get(pk=memory.superseded_by_id)
    assert erased.redacted_at is not None and erased.redaction_reason == "Wrong day"


def test_a_member_pins_and_unpins_a_fact_of_their_channel(client, member, seeded):
    client.force_login(member)
    memory = seeded.channel
    client.post(reverse("web:memory-pin", args=[memory.pk]))
    memory.refresh_from_db()
    assert memory.pinned
    assert "Unpin" in client.get(reverse("web:memory-detail", args=[memory.pk])).content.decode()
    client.post(reverse("web:memory-unpin", args=[memory.pk]))
    memory.refresh_from_db()
    assert not memory.pinned


def test_pinning_is_a_post_only_action(client, member, seeded):
    client.force_login(member)
    assert client.get(reverse("web:memory-pin", args=[seeded.channel.pk])).status_code == 405
    seeded.channel.refresh_from_db()
    assert not seeded.channel.pinned


def test_an_old_version_is_shown_but_not_changed(client, member, seeded):
    client.force_login(member)
    old = seeded.forgettable
    client.post(reverse("web:memory-correct", args=[old.pk]), {"body": "Is training for the York marathon"})
    old.refresh_from_db()
    page = client.get(reverse("web:memory-detail", args=[old.pk])).content.decode()
    assert "This version was corrected" in page and "Correct it" not in page
    assert reverse("web:memory-detail", args=[old.superseded_by_id]) in page
    assert client.post(reverse("web:memory-correct", args=[old.pk]), {"body": "Again"}).status_code == 403
    assert client.post(reverse("web:memory-forget", args=[old.pk]), {"reason": "x"}).status_code == 403


def test_nobody_changes_another_persons_fact_not_even_an_owner(client, owner, seeded):
    client.force_login(owner)
    memory = seeded.person_fact
    for name in ("web:memory-correct", "web:memory-pin", "web:memory-forget"):
        assert client.post(reverse(name, args=[memory.pk]), {"body": "x", "reason": "x"}).status_code == 404
    memory.refresh_from_db()
    assert memory.redacted_at is None and memory.superseded_by_id is None and not memory.pinned
