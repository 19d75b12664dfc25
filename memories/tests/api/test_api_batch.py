"""POST /api/v1/memories/batch: up to 100 remembers, a status per item, each in its own savepoint."""

from __future__ import annotations

from memories.models import IdempotencyKey, Memory


def batch(client, items):
    return client.post("/api/v1/memories/batch", {"items": items}, format="json")


def test_one_refusal_keeps_the_rest_and_each_item_has_its_status(agent_api, general, dm_with_mona):
    response = batch(
        agent_api,
        [
            {"body": "Lunch is at noon", "place": general, "subject_type": "workspace"},
            {"body": "", "place": general, "subject_type": "workspace"},
            {"body": "Prefers tea", "place": dm_with_mona, "tier": "profile"},
            {"body": "Typo", "place": general, "scoep": "channel", "subject_type": "workspace"},
            {"body": "x" * 2001, "place": general, "subject_type": "workspace"},
        ],
    )
    assert response.status_code == 200
    data = response.json()
    assert (data["created"], data["duplicates"], data["refused"]) == (2, 0, 3)
    assert [item["status"] for item in data["items"]] == ["created", "refused", "created", "refused", "refused"]
    assert data["items"][2]["memory"]["scope"] == "person"
    assert "body" in data["items"][1]["error"]["fields"] and data["items"][1]["error"]["error"] == "invalid"
    assert "scoep" in data["items"][3]["error"]["fields"]
    assert "2000" in data["items"][4]["error"]["fields"]["body"][0]
    assert sorted(Memory.objects.values_list("body", flat=True)) == ["Lunch is at noon", "Prefers tea"]


def test_an_item_sent_again_with_its_key_is_a_duplicate_not_a_second_write(agent_api, general):
    items = [{"body": "Standup at 9", "place": general, "subject_type": "workspace", "idempotency_key": "batch-1"}]
    first = batch(agent_api, items).json()["items"][0]
    again = batch(agent_api, items).json()["items"][0]
    assert (first["status"], again["status"]) == ("created", "duplicate")
    assert first["memory"]["id"] == again["memory"]["id"]
    assert Memory.objects.filter(body="Standup at 9").count() == 1
    # The same key names the same write as a lone remember.
    lone = agent_api.post(
        "/api/v1/memories",
        {"body": "Standup at 9", "place": general, "subject_type": "workspace"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="batch-1",
    )
    assert lone.status_code == 201 and lone.json()["id"] == first["memory"]["id"]
    changed = batch(agent_api, [{**items[0], "body": "Standup at 10"}]).json()["items"][0]
    assert changed["status"] == "refused" and changed["error"]["error"] == "conflict"
    assert IdempotencyKey.objects.count() == 1


def test_the_batch_counts_toward_the_live_fact_cap(agent_api, general, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 2
    data = batch(
        agent_api, [{"body": f"Fact {n}", "place": general, "subject_type": "workspace"} for n in range(3)]
    ).json()
    assert [item["status"] for item in data["items"]] == ["created", "created", "refused"]
    assert data["items"][2]["error"]["error"] == "limit_reached"


def test_more_than_100_items_or_none_is_refused_and_nothing_written(agent_api, general):
    too_many = batch(
        agent_api, [{"body": f"Fact {n}", "place": general, "subject_type": "workspace"} for n in range(101)]
    )
    assert too_many.status_code == 400 and "At most 100 items" in too_many.json()["fields"]["items"][0]
    assert batch(agent_api, []).status_code == 400
    not_objects = batch(agent_api, ["just text"])
    assert not_objects.status_code == 400 and "items.0" in str(not_objects.json()["fields"])
    assert Memory.objects.count() == 0


def test_a_hundred_items_are_written(agent_api, general):
    data = batch(
        agent_api, [{"body": f"Fact number {n}", "place": general, "subject_type": "workspace"} for n in range(100)]
    ).json()
    assert data["created"] == 100 and Memory.objects.count() == 100
