"""Every write endpoint honours Idempotency-Key: the same key answers from the first write, a different
request under it is refused (422), and a key that is not visible ASCII is refused by name."""

from __future__ import annotations

from datetime import date

import pytest

from admissions.models import SystemClaim
from memories.models import Injection, Memory, MemoryAudit
from memories.tests.api.helpers import remember
from threads.models import ThreadEvent


def twice(client, method, url, body, key="key-1"):
    call = getattr(client, method)
    first = call(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    second = call(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    return first, second


@pytest.fixture
def fact(agent_api, private_team):
    return remember(agent_api, private_team, "Standup at 9").json()["id"]


def test_correct_twice_writes_one_version(agent_api, private_team, fact):
    first, second = twice(
        agent_api, "post", f"/api/v1/memories/{fact}/supersede", {"body": "Standup at 10", "place": private_team}
    )
    assert (first.status_code, second.status_code) == (201, 201)
    assert second["Idempotent-Replayed"] == "true" and second.json()["id"] == first.json()["id"]
    assert Memory.objects.filter(body="Standup at 10").count() == 1


def test_pin_unpin_and_forget_replay_their_first_answer(agent_api, private_team, fact):
    body = {"place": private_team}
    first, second = twice(agent_api, "post", f"/api/v1/memories/{fact}/pin", body, key="pin-1")
    assert second["Idempotent-Replayed"] == "true" and second.json()["pinned"] is True
    first, second = twice(agent_api, "post", f"/api/v1/memories/{fact}/unpin", body, key="unpin-1")
    assert second["Idempotent-Replayed"] == "true" and second.json()["pinned"] is False
    audits = MemoryAudit.objects.count()
    first, second = twice(agent_api, "delete", f"/api/v1/memories/{fact}", {"reason": "asked", **body}, key="forget-1")
    assert second["Idempotent-Replayed"] == "true" and second.json()["state"] == "erased"
    assert second.json()["receipt"]["reason"] == "asked" and second.json()["body"] == ""
    assert MemoryAudit.objects.count() == audits + 1  # one erasure recorded, not two


def test_render_subject_erase_thread_events_and_claims_replay(agent_api, private_team):
    first, second = twice(agent_api, "post", "/api/v1/render", {"place": private_team, "turn_id": "t-1"}, key="r-1")
    assert second["Idempotent-Replayed"] == "true" and second.json()["sha256"] == first.json()["sha256"]
    assert Injection.objects.count() == 1

    remember(agent_api, private_team, "Candidate speaks Dutch", subject_type="candidate", subject_id="cand-1")
    first, second = twice(
        agent_api, "post", "/api/v1/subjects/candidate/cand-1/erase", {"reason": "request"}, key="e-1"
    )
    assert first.json()["erased"] == 1 and second.json() == first.json() and second["Idempotent-Replayed"] == "true"

    event = {
        "id": "m1",
        "role": "user",
        "author": "mona",
        "text": "Hi",
        "time": "2026-11-30T09:00:00Z",
        "place": private_team,
    }
    first, second = twice(agent_api, "post", "/api/v1/threads/T-1/events", {"events": [event]}, key="ev-1")
    assert (first.status_code, second.status_code) == (201, 201) and second.json() == first.json()
    assert ThreadEvent.objects.count() == 1

    claim = {
        "body": "The base rate is 4.75%",
        "slug": "sys:base-rate",
        "entity": "central-bank",
        "transparency": "ledger",
        "as_of": date.today().isoformat(),
        "evidence_refs": [{"kind": "url", "ref": "https://bank.example/rates"}],
    }
    first, second = twice(agent_api, "post", "/api/v1/system-claims", claim, key="c-1")
    assert (first.status_code, second.status_code) == (201, 201) and second["Idempotent-Replayed"] == "true"
    assert second.json()["id"] == first.json()["id"] and SystemClaim.objects.count() == 1


def test_a_key_reused_for_another_request_is_refused_on_every_write(agent_api, private_team, fact):
    url = f"/api/v1/memories/{fact}/supersede"
    agent_api.post(url, {"body": "A", "place": private_team}, format="json", HTTP_IDEMPOTENCY_KEY="same")
    other = agent_api.post(url, {"body": "B", "place": private_team}, format="json", HTTP_IDEMPOTENCY_KEY="same")
    assert other.status_code == 422 and "Idempotency-Key" in other.json()["fields"]
    claim = agent_api.post("/api/v1/system-claims", {"body": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="same")
    assert claim.status_code in (400, 422)


def test_a_malformed_key_is_refused_by_name(agent_api, fact, private_team):
    response = agent_api.post(
        f"/api/v1/memories/{fact}/pin", {"place": private_team}, format="json", HTTP_IDEMPOTENCY_KEY="has space"
    )
    assert response.status_code == 400 and "Idempotency-Key" in response.json()["fields"]
    assert Memory.objects.get(pk=fact).pinned is False
