"""Messages as long as a chat produces: one event's text up to THREAD_EVENT_MAX_CHARS (100,000 by default),
a request up to the events endpoint's own body limit (2 MiB), and a long event kept as episodes that each
fit the render clamp and go with their event's erasure."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from django.conf import settings

from memories.models import Memory, SourceKind
from memories.subjects import subject_erase
from threads.consolidation import thread_consolidate
from threads.episodes import EPISODE_MAX_CHARS
from threads.models import Thread, ThreadEvent

pytestmark = pytest.mark.django_db

SENTENCE = "The plan for week {n} moves the long run to Sunday and adds one rest day before it. "


def long_text(chars: int) -> str:
    text = "".join(SENTENCE.format(n=n) for n in range(chars // len(SENTENCE) + 2))
    return text[:chars]


def event(text: str, event_id: str = "m-1") -> dict:
    return {
        "id": event_id,
        "role": "user",
        "author": "mona",
        "text": text,
        "time": "2026-11-30T09:00:00Z",
        "place": {"channel": "D-mona", "kind": "dm", "people": ["mona"]},
    }


def post(client, events, thread="T-long"):
    return client.post(f"/api/v1/threads/{thread}/events", {"events": events}, format="json")


def test_the_default_limits_are_a_whole_message_and_two_mebibytes():
    assert settings.THREAD_EVENT_MAX_CHARS == 100_000
    assert settings.THREAD_EVENTS_MAX_REQUEST_BYTES == 2 * 1024 * 1024


def test_a_100000_character_event_becomes_episodes_within_the_clamp_erased_with_it(agent_api, member, org, episodes_on):
    text = long_text(100_000)
    response = post(agent_api, [event(text)])
    assert response.status_code == 201, response.json()
    assert ThreadEvent.objects.get().text == text  # stored whole, never cut
    thread_consolidate(thread_id=Thread.objects.get().pk)
    parts = list(Memory.objects.filter(source_kind=SourceKind.EPISODE))
    assert len(parts) >= 100_000 // EPISODE_MAX_CHARS
    assert {part.source_event_id for part in parts} == {ThreadEvent.objects.get().pk}
    clamps = {caps["fact_clamp"] for caps in settings.MEMORY_RENDER_CAPS.values()}
    assert all(len(part.body) <= min(clamps, default=EPISODE_MAX_CHARS) for part in parts)
    assert all(len(part.body) <= EPISODE_MAX_CHARS for part in parts)
    # Every word of the message is in some chunk: split, not cut.
    kept = Counter(word for part in parts for word in part.body.removeprefix("mona: ").split())
    assert kept == Counter(text.split())
    subject_erase(organisation=org, subject_type="user", subject_id=str(member.pk), reason="asked")
    assert not Memory.objects.filter(source_kind=SourceKind.EPISODE, redacted_at__isnull=True).exists()
    assert Memory.objects.filter(source_kind=SourceKind.EPISODE, redacted_at__isnull=False).count() == len(parts)


def test_one_character_over_the_limit_is_refused_naming_the_field_and_the_limit(agent_api, member):
    response = post(agent_api, [event("short", "m-0"), event(long_text(100_001))])
    assert response.status_code == 400, response.content[:300]
    assert "100000" in " ".join(response.json()["fields"]["events.1.text"])
    assert not ThreadEvent.objects.exists()  # nothing half-written


def test_the_events_endpoint_reads_past_the_api_limit_that_other_endpoints_keep(agent_api, member):
    # Three whole messages: more than the API's global limit, within the events endpoint's own.
    events = [event(long_text(100_000), f"m-{n}") for n in range(3)]
    size = len(json.dumps({"events": events}))
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE < size < settings.THREAD_EVENTS_MAX_REQUEST_BYTES
    response = post(agent_api, events)
    assert response.status_code == 201, response.content[:300]
    assert ThreadEvent.objects.count() == 3
    # Control: the same size to another endpoint is refused at the API's limit.
    padded = json.dumps({"body": "x", "padding": "x" * size})
    other = agent_api.post("/api/v1/memories", data=padded, content_type="application/json")
    assert other.status_code == 413, other.content[:300]
    assert str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in " ".join(other.json()["fields"]["Content-Length"])


def test_a_request_over_the_events_limit_is_refused_naming_it(agent_api, member):
    limit = settings.THREAD_EVENTS_MAX_REQUEST_BYTES
    data = json.dumps({"events": [event("short")]})
    data = data[:-1] + " " * (limit + 1 - len(data)) + "}"
    response = agent_api.post("/api/v1/threads/T-long/events", data=data, content_type="application/json")
    assert response.status_code == 413, response.content[:300]
    assert str(limit) in " ".join(response.json()["fields"]["Content-Length"])
    assert not ThreadEvent.objects.exists()
    # Control: one byte less is read and stored.
    data = data[:-2] + "}"
    assert (
        agent_api.post("/api/v1/threads/T-long/events", data=data, content_type="application/json").status_code == 201
    )
