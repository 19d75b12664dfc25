"""The consolidation tasks: the beat sweep finds threads behind their watermark, and a refused
extraction is recorded on the thread, with its watermark left where it was."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from memories.tests.loopback import ChatCompletionsStandIn
from threads.ingest import CONSOLIDATE_THREAD_TASK
from threads.models import Thread
from threads.tasks import consolidate_thread, sweep_consolidation

pytestmark = pytest.mark.django_db


def test_the_sweep_queues_threads_behind_their_watermark(post_events, dm_with, settings):
    behind = post_events("T-behind", [("mona", "Call me Mo")], place=dm_with)
    fresh = post_events("T-fresh", [("mona", "hello")], place=dm_with)
    done = post_events("T-done", [("mona", "hello")], place=dm_with)
    long_ago = timezone.now() - timedelta(minutes=5)
    Thread.objects.filter(pk=behind.pk).update(updated_at=long_ago)
    Thread.objects.filter(pk=done.pk).update(consolidated_through=1, updated_at=long_ago)
    broker = redis.Redis(unix_socket_path=settings.REDIS_URL.removeprefix("unix://"))
    broker.delete("consolidate")
    assert sweep_consolidation() == 1
    assert broker.llen("consolidate") == 1
    broker.delete("consolidate")
    assert fresh.pk  # written just now: left to the task its ingest queued


def test_tasks_keep_the_names_queued_messages_carry():
    assert consolidate_thread.name == CONSOLIDATE_THREAD_TASK == "threads.tasks.consolidate_thread"
    assert sweep_consolidation.name == "threads.tasks.sweep_consolidation"


def test_ingest_queues_consolidation_by_the_task_name(
    post_events, dm_with, settings, django_capture_on_commit_callbacks
):
    broker = redis.Redis(unix_socket_path=settings.REDIS_URL.removeprefix("unix://"))
    broker.delete("consolidate")
    with django_capture_on_commit_callbacks(execute=True):
        thread = post_events("T-queued", [("mona", "Call me Mo")], place=dm_with)
    queued = [json.loads(message) for message in broker.lrange("consolidate", 0, -1)]
    broker.delete("consolidate")
    assert [(m["headers"]["task"], m["headers"]["argsrepr"]) for m in queued] == [
        ("threads.tasks.consolidate_thread", f"[{thread.pk}]")
    ]


def test_a_refused_extraction_is_recorded_and_the_watermark_stays(post_events, dm_with, settings):
    thread = post_events("T-1", [("mona", "Call me Mo")], place=dm_with)
    with ChatCompletionsStandIn(lambda body: {}, status=400) as standin:
        settings.CONSOLIDATION_EXTRACTOR = "llm"
        settings.EXTRACTOR_LLM_BASE_URL = standin.base_url
        result = consolidate_thread.apply(args=[thread.pk]).get()
    assert "refused the request (400)" in result["error"]
    thread.refresh_from_db()
    assert thread.consolidated_through == 0 and "refused the request (400)" in thread.consolidation_error


def test_the_task_reports_what_it_did(post_events, dm_with):
    thread = post_events("T-1", [("mona", "Call me Mo. My timezone is CET.")], place=dm_with)
    assert consolidate_thread.apply(args=[thread.pk]).get() == {
        "events": 1,
        "written": 2,
        "superseded": 0,
        "duplicates": 0,
        "watermark": 1,
    }


def test_admin_lists_threads_waiting_for_consolidation(admin_client, post_events, dm_with):
    post_events("T-waiting", [("mona", "hello")], place=dm_with)
    page = admin_client.get("/admin/threads/thread/", {"consolidation": "behind"})
    assert page.status_code == 200 and "T-waiting" in page.content.decode()
    for choice in ("done", "failing"):
        page = admin_client.get("/admin/threads/thread/", {"consolidation": choice})
        assert page.status_code == 200 and "T-waiting" not in page.content.decode(), choice
