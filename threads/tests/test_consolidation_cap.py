"""Consolidation counts toward the agent's live-fact cap and says in the thread's status that it stopped there."""

from __future__ import annotations

import pytest

from threads.consolidation import thread_consolidate
from threads.models import Thread

pytestmark = pytest.mark.django_db


def test_consolidation_stops_at_the_cap_and_the_thread_says_so(post_events, dm_with, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 1
    thread = post_events("T-cap", [("mona", "Call me Mo. My timezone is CET.")], place=dm_with)
    result = thread_consolidate(thread_id=thread.pk)
    assert len(result.written) == 1 and result.skipped == 1
    thread = Thread.objects.get(pk=thread.pk)
    assert thread.consolidated_through == 1  # the watermark still moves
    assert thread.consolidation_error.startswith("Stopped at the cap:")
    assert "1 live facts" in thread.consolidation_error


def test_below_the_cap_the_status_stays_empty(post_events, dm_with):
    thread = post_events("T-room", [("mona", "Call me Mo. My timezone is CET.")], place=dm_with)
    thread_consolidate(thread_id=thread.pk)
    assert Thread.objects.get(pk=thread.pk).consolidation_error == ""
