"""Fault test: Redis is stopped while 200 memories are remembered through the API. Every call
answers 201 at once; after Redis returns, the beat sweep embeds them all."""

from __future__ import annotations

import time

import pytest
from rest_framework.test import APIClient

from memories.embeddings.embedders import get_embedder
from memories.models import Memory
from memories.tests import processes

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROWS = 200


def _wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_writes_succeed_while_redis_is_down_and_the_sweep_embeds_them_after(agent_with_token, member, tmp_path):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_with_token[1]}")
    place = {"channel": "D-mona", "kind": "dm", "people": [member.username]}
    redis_server = processes.StoppableRedis(tmp_path / "redis")
    redis_server.start()
    with processes.broker_at(redis_server.url):
        redis_server.stop()
        assert not redis_server.answers()
        started = time.monotonic()
        statuses = [
            api.post(
                "/api/v1/memories", {"body": f"Fact {i} said while Redis was down", "place": place}, format="json"
            ).status_code
            for i in range(ROWS)
        ]
        elapsed = time.monotonic() - started
        assert statuses == [201] * ROWS
        assert Memory.objects.count() == ROWS
        assert not Memory.objects.filter(embedding__isnull=False).exists()
        print(f"{ROWS} remembers with the broker down took {elapsed:.1f}s")

        redis_server.start()
        # Nothing reached the broker while it was down: the sweep, not a queued task, does the work.
        assert redis_server.server.llen("embed") == 0
        env = {
            "REDIS_URL": redis_server.url,
            "ARCHIVIST_EMBEDDING_SWEEP_SECONDS": "1",
            "ARCHIVIST_EMBEDDING_SWEEP_GRACE_SECONDS": "0",
        }
        worker = processes.worker(tmp_path / "worker.log", **env).start()
        beat = processes.beat(tmp_path / "beat.log", tmp_path, **env).start()
        try:
            _wait_for(lambda: Memory.objects.filter(embedding__isnull=False).count() == ROWS, 90, "the sweep")
        finally:
            beat.stop()
            worker.stop()
            redis_server.stop()
    assert Memory.objects.filter(embedding_model=get_embedder().name).count() == ROWS
    assert "memories.tasks.sweep_embeddings" in beat.log()
