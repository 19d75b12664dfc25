"""POST /api/v1/threads/{thread_id}/events: agents ingest events; bad input is refused by field,
and nothing is half-written."""

from __future__ import annotations

import pytest
from django.conf import settings

from memories.models import Channel
from threads.models import Thread, ThreadEvent

pytestmark = pytest.mark.django_db


def event(text="Call me Mo", **overrides):
    body = {
        "id": "m-1",
        "role": "user",
        "author": "mona",
        "text": text,
        "time": "2026-11-30T09:00:00Z",
        "place": {"channel": "D-mona", "kind": "dm", "people": ["mona"]},
    }
    body.update(overrides)
    return body


def post(client, events, thread="T-42"):
    return client.post(f"/api/v1/threads/{thread}/events", {"events": events}, format="json")


def test_events_are_stored_in_order_and_consolidation_is_queued(
    agent_api, member, agent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = post(agent_api, [event(), event("My timezone is CET", id="m-2")])
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["accepted"] == 2 and body["duplicates"] == 0 and body["last_sequence"] == 2
    assert [(e["index"], e["sequence"]) for e in body["events"]] == [(0, 1), (1, 2)]
    assert body["refused"] == 0 and body["refusals"] == []
    rows = list(ThreadEvent.objects.order_by("sequence"))
    assert [(r.sequence, r.text, r.author_user_id, r.agent_id) for r in rows] == [
        (1, "Call me Mo", member.pk, agent.pk),
        (2, "My timezone is CET", member.pk, agent.pk),
    ]
    assert rows[0].place_people == [str(member.pk)] and rows[0].organisation_id == agent.organisation_id
    assert len(callbacks) == 1  # one consolidation task per ingest, after commit
    assert Channel.objects.filter(external_id="D-mona", kind="dm").exists()


def test_resent_events_are_recognised_by_their_id(agent_api, member):
    post(agent_api, [event()])
    again = post(agent_api, [event(), event("Another", id="m-3")])
    assert again.status_code == 201
    assert [(e["id"], e["sequence"], e["duplicate"]) for e in again.json()["events"]] == [
        ("m-1", None, True),
        ("m-3", 2, False),
    ]
    only_old = post(agent_api, [event()])
    assert only_old.status_code == 200 and only_old.json()["accepted"] == 0
    assert ThreadEvent.objects.count() == 2


@pytest.mark.parametrize(
    ("events", "field"),
    [
        ([event(text="")], "events.0.text"),
        ([event(text="x" * (settings.THREAD_EVENT_MAX_CHARS + 1))], "events.0.text"),
        ([event(text="bell \x07 here")], "events.0.text"),
        ([event(role="bot")], "events.0.role"),
        ([event(place={"channel": "D-x", "kind": "group", "people": ["mona"]})], "events.0.place.kind"),
        ([event(time="yesterday")], "events.0.time"),
        ([event(colour="blue")], "events.0.colour"),
        ([], "events"),
        ([event(id=f"m-{i}") for i in range(101)], "events"),
    ],
)
def test_bad_input_is_refused_by_field_and_nothing_is_written(agent_api, member, events, field):
    # A good event first: the whole call is refused, not half-stored.
    response = post(agent_api, [event(id="good", text="Fine"), *events] if events else events)
    assert response.status_code == 400, response.json()
    fields = response.json()["fields"]
    shifted = field.replace("events.0", "events.1") if events and field.startswith("events.0") else field
    assert shifted in fields, fields
    assert Thread.objects.count() == 0 and ThreadEvent.objects.count() == 0
    assert "refusals" not in response.json()  # a malformed request is refused whole, not event by event


def test_a_body_naming_the_organisation_is_refused(agent_api, member, other_org):
    response = agent_api.post(
        "/api/v1/threads/T-1/events", {"events": [event()], "organisation": other_org.slug}, format="json"
    )
    assert response.status_code == 400 and "organisation" in response.json()["fields"]


def test_a_bad_thread_id_is_refused(agent_api, member):
    response = post(agent_api, [event()], thread="-starts-with-dash")
    assert response.status_code == 400 and "thread_id" in response.json()["fields"]


def test_malformed_json_is_a_400(agent_api):
    response = agent_api.post("/api/v1/threads/T-1/events", "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "invalid"


def test_account_holders_do_not_post_thread_events(member):
    from memories.tests.api.helpers import session_client

    response = post(session_client(member), [event()])
    assert response.status_code == 403 and response.json()["error"] == "forbidden"


def test_the_same_thread_id_in_two_organisations_is_two_threads(agent_api, outsider_agent_api, member, outsider):
    post(agent_api, [event()])
    response = post(
        outsider_agent_api, [event(author="otto", place={"channel": "D", "kind": "dm", "people": ["otto"]})]
    )
    assert response.status_code == 201 and response.json()["last_sequence"] == 1
    assert Thread.objects.filter(external_id="T-42").count() == 2
    # Neither sees the other's thread state.
    assert outsider_agent_api.get("/api/v1/threads/T-42").json()["last_sequence"] == 1


def test_another_organisations_thread_answers_404(agent_api, outsider_agent_api, member):
    post(agent_api, [event()])
    assert outsider_agent_api.get("/api/v1/threads/T-42").status_code == 404


def test_the_thread_state_lists_what_was_learned_with_its_sources(agent_api, member):
    from threads.consolidation import thread_consolidate

    post(agent_api, [event("Hello"), event("Call me Mo", id="m-2")])
    thread_consolidate(thread_id=Thread.objects.get().pk)
    body = agent_api.get("/api/v1/threads/T-42").json()
    assert body["consolidated_through"] == 2
    assert [(item["key"], item["sources"]) for item in body["learned"]] == [("called", [2])]
