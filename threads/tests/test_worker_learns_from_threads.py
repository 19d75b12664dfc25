"""End to end with a real worker: events posted to the API become learned memories with their
sources, and the same worker embeds them."""

from __future__ import annotations

import time

import pytest

from memories.embeddings.embedders import get_embedder
from memories.models import Bucket, Memory, SourceKind
from memories.tests import processes

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def facts(model: str):
    """The learned facts the worker embedded: learned rows that are not episodes."""
    return Memory.objects.filter(bucket=Bucket.LEARNED, embedding_model=model).exclude(source_kind=SourceKind.EPISODE)


def test_posted_events_become_learned_memories_that_the_worker_embeds(agent_api, member, tmp_path):
    place = {"channel": "D-mona", "kind": "dm", "people": [member.username]}
    worker = processes.worker(tmp_path / "worker.log", queues="embed,consolidate,maintenance").start()
    try:
        response = agent_api.post(
            "/api/v1/threads/T-7/events",
            {
                "events": [
                    {"id": "1", "role": "user", "author": "mona", "text": "Call me Mo.", "time": "2026-11-30T09:00:00Z",
                     "place": place},
                    {"id": "2", "role": "assistant", "author": "helper", "text": "Will do, Mo.",
                     "time": "2026-11-30T09:00:01Z", "place": place},
                    {"id": "3", "role": "user", "author": "mona", "text": "My timezone is CET, by the way",
                     "time": "2026-11-30T09:00:05Z", "place": place},
                ]
            },
            format="json",
        )  # fmt: skip
        assert response.status_code == 201
        model = get_embedder().name
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if facts(model).count() == 2:
                break
            time.sleep(0.2)
    finally:
        worker.stop()
    learned = {m.body: m for m in facts(model)}
    assert set(learned) == {"mona wants to be called Mo", "mona's timezone is CET"}, worker.log()[-2000:]
    # Besides the facts, each event was kept as an episode (what was said, recallable as said).
    episodes = Memory.objects.filter(bucket=Bucket.LEARNED, source_kind=SourceKind.EPISODE)
    assert episodes.count() == 3
    called = learned["mona wants to be called Mo"]
    assert called.source_ref.endswith("#1") and called.author == "model"
    body = agent_api.get("/api/v1/threads/T-7").json()
    assert body["consolidated_through"] == 3
    assert sorted(item["sources"][0] for item in body["learned"]) == [1, 3]
