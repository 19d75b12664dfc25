"""The batch holds its writer's live-fact cap once and counts down: it stops exactly where one-by-one writes would."""

from __future__ import annotations

from memories import writer
from memories.models import Memory, MemoryAudit
from memories.tests.api.helpers import remember


def batch(client, items):
    return client.post("/api/v1/memories/batch", {"items": items}, format="json")


def fact(place, body, **extra):
    return {"body": body, "place": place, "subject_type": "workspace", **extra}


def test_a_batch_crossing_the_cap_writes_exactly_up_to_it_and_refuses_the_rest(
    agent_api, general, settings, monkeypatch
):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 4
    assert batch(agent_api, [fact(general, "Held before")]).json()["created"] == 1
    queued = []
    monkeypatch.setattr(writer, "enqueue_embedding", lambda ids: queued.append([str(pk) for pk in ids]))
    items = [fact(general, "One"), fact(general, ""), fact(general, "Two"), fact(general, "Three")]
    items += [fact(general, "Four"), fact(general, "Five", idempotency_key="past-the-cap")]
    data = batch(agent_api, items).json()
    # A refused item takes no room: three more fit under the cap of four, and the rest are refused as a lone
    # remember would be.
    assert [item["status"] for item in data["items"]] == ["created", "refused", "created", "created"] + ["refused"] * 2
    lone = agent_api.post("/api/v1/memories", fact(general, "Lone"), format="json")
    assert lone.status_code == 409
    for item in data["items"][4:]:
        assert item["error"] == {"error": "limit_reached", "detail": lone.json()["detail"], "fields": {}}
    assert Memory.objects.count() == 4
    written = [item["memory"]["id"] for item in data["items"] if item["status"] == "created"]
    assert queued == [written]  # one enqueue for the batch's rows
    receipts = MemoryAudit.objects.filter(action=MemoryAudit.Action.REMEMBER).values_list("memory_id", flat=True)
    assert sorted(map(str, receipts)) == sorted(map(str, Memory.objects.values_list("id", flat=True)))


def test_a_batch_at_the_cap_refuses_every_item_and_a_freed_place_is_seen_by_the_next(agent_api, general, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 1
    first = batch(agent_api, [fact(general, "Only"), fact(general, "Too many")]).json()
    assert [item["status"] for item in first["items"]] == ["created", "refused"]
    assert batch(agent_api, [fact(general, "Still too many")]).json()["refused"] == 1
    only = first["items"][0]["memory"]["id"]
    assert agent_api.delete(f"/api/v1/memories/{only}", {"place": general}, format="json").status_code in (200, 204)
    assert batch(agent_api, [fact(general, "Room again")]).json()["created"] == 1


def test_a_person_batch_counts_toward_their_own_cap(member_api, dm_with_mona, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_PERSON = 2
    assert remember(member_api, dm_with_mona, "Said alone").status_code == 201
    data = batch(member_api, [{"body": f"Note {n}", "place": dm_with_mona} for n in range(3)]).json()
    assert [item["status"] for item in data["items"]] == ["created", "refused", "refused"]
    assert "You hold 2 live facts" in data["items"][1]["error"]["detail"]


def test_a_replayed_item_takes_no_room(agent_api, general, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 2
    keyed = fact(general, "Keyed", idempotency_key="import-1")
    assert batch(agent_api, [keyed]).json()["created"] == 1
    data = batch(agent_api, [keyed, fact(general, "Second"), fact(general, "Third")]).json()
    assert [item["status"] for item in data["items"]] == ["duplicate", "created", "refused"]
