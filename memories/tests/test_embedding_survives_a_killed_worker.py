"""Fault test: kill -9 the worker halfway through 1,000 embeddings; a new worker finishes
the work and every row ends embedded exactly once."""

from __future__ import annotations

import time

import pytest
import redis
from django.db.models import Count

from memories.embeddings.embedders import get_embedder
from memories.models import Memory, MemoryAudit
from memories.tests import processes

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROWS = 1_000


def _embedded() -> int:
    return Memory.objects.filter(embedding__isnull=False).count()


def _wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_killing_the_worker_halfway_loses_and_duplicates_no_embedding(make_memory, tmp_path, settings):
    broker = redis.Redis(unix_socket_path=settings.REDIS_URL.removeprefix("unix://"))
    broker.delete("embed", "unacked", "unacked_index")  # messages other tests of this process left behind
    bodies = [
        f"Memory {i}: the team in office {i % 37} prefers {['tea', 'coffee', 'water'][i % 3]}" for i in range(ROWS)
    ]
    started = time.monotonic()
    for body in bodies:
        make_memory(body=body)  # each write enqueues its embedding on commit, as the API does
    print(f"wrote {ROWS} memories in {time.monotonic() - started:.1f}s")
    assert broker.llen("embed") == ROWS

    # A short visibility timeout, so the messages the dead worker held come back quickly.
    first = processes.worker(tmp_path / "first.log", queues="embed", concurrency=2, CELERY_VISIBILITY_TIMEOUT="5")
    first.start()
    try:
        _wait_for(lambda: _embedded() >= ROWS // 3, 120, "the first worker to get going")
        first.kill9()
    finally:
        first.stop()
    at_kill = _embedded()
    held = broker.hlen("unacked")
    assert at_kill < ROWS, "the worker finished before it could be killed; the test proved nothing"
    assert held > 0, "the dead worker held no messages; redelivery was not exercised"

    second = processes.worker(tmp_path / "second.log", queues="embed", concurrency=2, CELERY_VISIBILITY_TIMEOUT="5")
    second.start()
    try:
        _wait_for(lambda: _embedded() == ROWS, 120, "every row to be embedded")
        # The messages the dead worker held are redelivered and must find their rows done.
        _wait_for(lambda: broker.llen("embed") == 0 and broker.hlen("unacked") == 0, 60, "the queue to drain")
    finally:
        second.stop()

    model = get_embedder().name
    assert Memory.objects.filter(embedding__isnull=False, embedding_model=model).count() == ROWS
    per_row = (
        MemoryAudit.objects.filter(action=MemoryAudit.Action.EMBED)
        .values("memory_id")
        .annotate(times=Count("id"))
        .values_list("times", flat=True)
    )
    assert len(per_row) == ROWS and set(per_row) == {1}, "a row was embedded twice or not at all"
    print(f"killed at {at_kill}/{ROWS} embedded with {held} messages unacknowledged")
