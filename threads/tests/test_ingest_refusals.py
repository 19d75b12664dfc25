"""Ingest refuses event by event what breaks a rule about who or where: an event in a place the caller
may not act in, or whose place names someone who is not a person of the organisation, is refused with
its index and field, and the rest are stored and consolidated. When every event is refused nothing is
written and the answer is 422."""

from __future__ import annotations

import pytest

from accounts.models import AgentToken
from memories.models import Memory, SourceKind
from threads.consolidation import thread_consolidate
from threads.models import Thread, ThreadEvent
from threads.tests.test_ingest_api import event, post

pytestmark = pytest.mark.django_db

NOBODY = {"channel": "D-nobody", "kind": "dm", "people": ["nobody"]}


def three(middle_place: dict) -> list[dict]:
    return [
        event("I went hiking on Sunday.", id="m-1"),
        event("I cook on Mondays.", id="m-2", place=middle_place),
        event("Call me Mo", id="m-3"),
    ]


def test_one_event_naming_nobody_is_refused_and_the_other_two_are_kept_and_consolidated(agent_api, member, episodes_on):
    response = post(agent_api, three(NOBODY))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["accepted"], body["duplicates"], body["refused"]) == (2, 0, 1)
    assert [(e["index"], e["id"], e["sequence"]) for e in body["events"]] == [(0, "m-1", 1), (2, "m-3", 2)]
    [refusal] = body["refusals"]
    assert refusal["index"] == 1 and refusal["error"]["error"] == "invalid"
    assert set(refusal["error"]["fields"]) == {"events.1.place.people"}
    assert "Not a person of your organisation: nobody" in refusal["error"]["detail"]
    assert list(ThreadEvent.objects.order_by("sequence").values_list("external_id", flat=True)) == ["m-1", "m-3"]

    thread_consolidate(thread_id=Thread.objects.get().pk)
    episodes = Memory.objects.filter(source_kind=SourceKind.EPISODE)
    assert {memory.source_event.external_id for memory in episodes} == {"m-1", "m-3"}
    assert agent_api.get("/api/v1/threads/T-42").json()["consolidated_through"] == 2


def test_a_place_the_token_may_not_use_refuses_only_its_event(agent_api, agent, member):
    # Its DM with mona, which its events record: a restricted token records a DM only with a listed person.
    AgentToken.objects.filter(agent=agent).update(
        restricted=True, allowed_channels=["D-mona"], allowed_people=[member.pk]
    )
    response = post(agent_api, three({"channel": "C-elsewhere", "kind": "public", "people": []}))
    assert response.status_code == 201, response.json()
    [refusal] = response.json()["refusals"]
    assert refusal["index"] == 1 and refusal["error"]["error"] == "not_found"
    assert set(refusal["error"]["fields"]) == {"events.1.place"}
    assert ThreadEvent.objects.count() == 2


def test_when_every_event_is_refused_nothing_is_written_and_the_answer_is_422(agent_api, member):
    events = [event(id="m-1", place=NOBODY), event(id="m-2", place={**NOBODY, "channel": "D-nobody-2"})]
    response = post(agent_api, events)
    assert response.status_code == 422, response.json()
    body = response.json()
    assert body["error"] == "invalid" and "nothing was stored" in body["detail"]
    assert [r["index"] for r in body["refusals"]] == [0, 1]
    assert set(body["fields"]) == {"events.0.place.people", "events.1.place.people"}
    assert Thread.objects.count() == 0 and ThreadEvent.objects.count() == 0


def test_a_refused_event_id_is_not_a_duplicate_and_a_replay_answers_the_same(agent_api, member):
    first = agent_api.post(
        "/api/v1/threads/T-42/events", {"events": three(NOBODY)}, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    again = agent_api.post(
        "/api/v1/threads/T-42/events", {"events": three(NOBODY)}, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    assert again.status_code == first.status_code == 201
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert ThreadEvent.objects.count() == 2
    # The refused id was never stored: sent again in a place that works, it is new.
    fixed = post(agent_api, [event("I cook on Mondays.", id="m-2")])
    assert [(e["id"], e["duplicate"]) for e in fixed.json()["events"]] == [("m-2", False)]


def test_an_all_refused_call_sent_again_with_its_key_answers_the_same(agent_api, member):
    # A refusal keeps nothing, not even the key (every 4xx rolls its request back): the retry is
    # checked again and, the directory unchanged, refused the same way.
    body = {"events": [event(place=NOBODY)]}
    first = agent_api.post("/api/v1/threads/T-42/events", body, format="json", HTTP_IDEMPOTENCY_KEY="k-2")
    again = agent_api.post("/api/v1/threads/T-42/events", body, format="json", HTTP_IDEMPOTENCY_KEY="k-2")
    assert again.status_code == first.status_code == 422
    assert again.json() == first.json()
    assert ThreadEvent.objects.count() == 0 and Thread.objects.count() == 0
