"""Contextual recall's walk through a thread: a thread's episodes are neighbours by their events' order."""

from __future__ import annotations

from lib.kept import KeptAnswers
from memories.db.predicates import shown_in_turn_sql
from memories.recall.candidates import RecallRequest
from memories.recall.contextual import SAME_PLACE
from threads.models import Thread

# Where an organisation has no thread the walk finds nothing, yet planning it cost the contextual statement 14%
# there, and asking the database on each recall 13% (bench/thread_walk.py, 150 questions, a loaded 2-core host;
# kept briefly: 1%). So the answer is kept per process (`lib.kept`), as `memories.recall.hnsw` keeps its index's name: a
# thread created by another process is walked within `THREADS_SEEN_SECONDS`, one created by this process at once.
THREADS_SEEN_SECONDS = 30.0
_threads_seen = KeptAnswers[bool](THREADS_SEEN_SECONDS)


def organisation_has_threads(organisation_id) -> bool:
    return _threads_seen.get(organisation_id, lambda key: Thread.objects.filter(organisation_id=key).exists())


def threads_seen_forget(organisation_id) -> None:
    _threads_seen.forget(organisation_id)


def on_thread_saved(sender, instance: Thread, created: bool, **kwargs) -> None:
    if created:
        threads_seen_forget(instance.organisation_id)


def thread_neighbours_sql(tenant: str, predicate: str) -> str:
    """Each anchor's neighbours by its event's order in the thread, not by when they were written (a thread
    consolidated in several runs, or events posted late). Parts of one split event are each other's nearest
    neighbours (step 1, never 0)."""
    return (
        "SELECT a.id AS anchor, x.id, x.step FROM anchor a\n"
        f"  JOIN threads_threadevent e ON e.id = a.source_event_id AND e.organisation_id = {tenant}\n"
        "  CROSS JOIN LATERAL (\n"
        "    SELECT m.id, (CASE WHEN f.sequence = e.sequence THEN 1"
        " ELSE f.sequence::bigint - e.sequence::bigint END) AS step\n"
        "    FROM threads_threadevent f\n"
        f"    JOIN memories_memory m ON m.source_event_id = f.id AND m.organisation_id = {tenant}\n"
        f"    WHERE f.organisation_id = {tenant} AND f.thread_id = e.thread_id AND %(window)s > 0\n"
        "      AND f.sequence BETWEEN e.sequence - %(window)s AND e.sequence + %(window)s\n"
        f"      AND m.id <> a.id AND {predicate} AND {SAME_PLACE} AND {shown_in_turn_sql('m')}) x"
    )


def thread_neighbour_walk(request: RecallRequest, tenant: str, predicate: str) -> str | None:
    """The walk, for `memories.recall.contextual.register_neighbour_walk`: only where the organisation has a thread."""
    if not organisation_has_threads(request.organisation_id):
        return None
    return thread_neighbours_sql(tenant, predicate)
