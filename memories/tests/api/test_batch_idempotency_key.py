"""`Idempotency-Key` on `POST /api/v1/memories/batch` covers the whole call, as on every write: a retry with
the key answers the first call's items again and writes nothing; the key on another request is refused."""

from __future__ import annotations

from memories.models import IdempotencyKey, Memory
from memories.services import memory_forget


def batch(client, items, key=None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return client.post("/api/v1/memories/batch", {"items": items}, format="json", **headers)


def facts(place, count=3):
    items = [{"body": f"Batch fact {n}", "place": place, "subject_type": "workspace"} for n in range(count)]
    return [*items, {"body": "", "place": place}]  # one refused, so a retry must repeat a refusal too


def test_a_retry_with_the_key_answers_the_first_calls_items_and_writes_nothing(agent_api, general):
    first = batch(agent_api, facts(general), key="import-2026-12-01")
    assert first.status_code == 200 and first.json()["created"] == 3, first.content
    assert "Idempotent-Replayed" not in first.headers
    again = batch(agent_api, facts(general), key="import-2026-12-01")
    assert again.status_code == 200, again.content
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert Memory.objects.count() == 3


def test_without_the_key_the_same_call_writes_again(agent_api, general):
    # The positive control: what the key prevents happens without it.
    for _ in range(2):
        assert batch(agent_api, facts(general)).json()["created"] == 3
    assert Memory.objects.count() == 6


def test_the_key_on_another_batch_is_refused_naming_it_and_writes_nothing(agent_api, general):
    assert batch(agent_api, facts(general), key="import-a").status_code == 200
    other = batch(agent_api, facts(general, count=5), key="import-a")
    assert other.status_code == 422, other.content
    assert "Idempotency-Key" in other.json()["fields"]
    assert Memory.objects.count() == 3
    assert IdempotencyKey.objects.filter(key="import-a").count() == 1


def test_a_retry_after_an_erasure_shows_the_receipt_not_the_text(agent_api, general):
    first = batch(agent_api, facts(general, count=1), key="import-b").json()
    memory = Memory.objects.get(pk=first["items"][0]["memory"]["id"])
    memory_forget(memory=memory, reason="asked to")
    again = batch(agent_api, facts(general, count=1), key="import-b").json()
    replayed = again["items"][0]["memory"]
    assert replayed["id"] == str(memory.pk) and replayed["state"] == "erased" and replayed["body"] == ""
    assert first["items"][0]["memory"]["body"] == "Batch fact 0"  # the positive control: it had its text


def test_a_retry_repeats_a_refusal_that_quotes_a_nul_the_database_cannot_store(agent_api, general):
    items = [{"body": "Kept", "place": general, "subject_type": "workspace"}, {"body": "x", "\u0000": 1}]
    first = batch(agent_api, items, key="import-nul")
    assert first.status_code == 200 and first.json()["refused"] == 1, first.content
    again = batch(agent_api, items, key="import-nul")
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
