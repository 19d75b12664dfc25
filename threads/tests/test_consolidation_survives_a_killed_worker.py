"""Fault test: kill -9 the worker while it consolidates a long thread; nothing is half-written (every
episode is of an event at or below the watermark, and every such event has its episode), and a
new worker finishes the thread with each event kept exactly once."""

from __future__ import annotations

import time

import pytest
import redis
from django.db.models import Count

from memories.models import Memory, SourceKind
from memories.tests import processes
from threads.consolidation import MAX_EVENTS_PER_BATCH
from threads.models import Thread, ThreadEvent

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

EVENTS = 5 * MAX_EVENTS_PER_BATCH


def _watermark(thread: Thread) -> int:
    return Thread.objects.get(pk=thread.pk).consolidated_through


def _wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _episodes_per_event(thread: Thread) -> dict[int, int]:
    """How many live episodes each event of the thread has, by sequence."""
    rows = (
        Memory.objects.filter(source_kind=SourceKind.EPISODE, source_event__thread=thread, redacted_at__isnull=True)
        .values("source_event__sequence")
        .annotate(times=Count("id"))
    )
    return {row["source_event__sequence"]: row["times"] for row in rows}


def _assert_whole(thread: Thread, watermark: int) -> None:
    """Episodes exactly for the events the watermark covers, one each (no event is over 500 characters)."""
    assert _episodes_per_event(thread) == dict.fromkeys(range(1, watermark + 1), 1)


def test_killing_the_worker_mid_thread_half_writes_nothing_and_loses_no_event(
    episodes_on, post_events, dm_with, tmp_path, settings
):
    broker = redis.Redis(unix_socket_path=settings.REDIS_URL.removeprefix("unix://"))
    broker.delete("consolidate", "unacked", "unacked_index")  # messages other tests of this process left behind
    lines = [
        ("mona", f"Turn {i}: we talked about the trip to office {i % 37} and the {i % 11} bags.") for i in range(EVENTS)
    ]
    for start in range(0, EVENTS, 100):
        thread = post_events("T-long", lines[start : start + 100], place=dm_with)
    assert ThreadEvent.objects.filter(thread=thread).count() == EVENTS

    first = processes.worker(tmp_path / "first.log", queues="consolidate", CELERY_VISIBILITY_TIMEOUT="5")
    first.start()
    try:
        _wait_for(lambda: _watermark(thread) >= MAX_EVENTS_PER_BATCH, 180, "the first batch to commit")
        first.kill9()
    finally:
        first.stop()
    at_kill = _watermark(thread)
    assert at_kill < EVENTS, "the worker finished before it could be killed; the test proved nothing"
    _assert_whole(thread, at_kill)  # the batch it was killed in left nothing behind

    second = processes.worker(tmp_path / "second.log", queues="consolidate", CELERY_VISIBILITY_TIMEOUT="5")
    second.start()
    try:
        _wait_for(lambda: _watermark(thread) == EVENTS, 240, "the thread to be consolidated")
    finally:
        second.stop()
    _assert_whole(thread, EVENTS)
    print(f"killed at watermark {at_kill}/{EVENTS}")
