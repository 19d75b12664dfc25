"""Contextual recall's walk through a thread: a thread's episodes are neighbours by their messages' order and
their parts' (`threads.episode_parts`)."""

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


def _parts(tenant: str, where: str, order: str, sign: str) -> str:
    """The first or last parts of the nearest `%(window)s` messages on one side, numbered outwards from 1."""
    return (
        f"SELECT y.id, {sign}row_number() OVER (ORDER BY y.message {order}) FROM (\n"
        "      SELECT q.memory_id AS id, q.message FROM threads_episodepart q\n"
        f"      WHERE q.organisation_id = {tenant} AND q.thread_id = p.thread_id AND {where}\n"
        f"      ORDER BY q.message {order} LIMIT %(window)s) y"
    )


def thread_neighbours_sql(tenant: str, predicate: str) -> str:
    """Each anchor's neighbours in its thread, as a conversation's turns are: the parts of its own message
    within the window (step: how many parts away), and the nearest messages before and after it, each by the
    part that touches this message (the last part of one before, the first of one after; step: how many
    messages away). A long message's every part so reaches the question before it and the answer after it,
    and a message in one part is a turn among turns, its neighbours counted in messages."""
    same_message = (
        "SELECT q.memory_id, q.part::bigint - p.part::bigint FROM threads_episodepart q\n"
        f"      WHERE q.organisation_id = {tenant} AND q.thread_id = p.thread_id AND q.message = p.message\n"
        "        AND q.part BETWEEN p.part - %(window)s AND p.part + %(window)s AND q.part <> p.part"
    )
    before = _parts(tenant, "q.message < p.message AND q.part = q.parts", "DESC", "-")
    after = _parts(tenant, "q.message > p.message AND q.part = 1", "ASC", "")
    return (
        "SELECT a.id AS anchor, x.id, x.step FROM anchor a\n"
        f"  JOIN threads_episodepart p ON p.memory_id = a.id AND p.organisation_id = {tenant} AND %(window)s > 0\n"
        "  CROSS JOIN LATERAL (\n"
        "    SELECT m.id, w.step FROM (\n"
        f"      {same_message}\n"
        f"      UNION ALL {before}\n"
        f"      UNION ALL {after}\n"
        "    ) w (id, step)\n"
        f"    JOIN memories_memory m ON m.id = w.id AND m.organisation_id = {tenant}\n"
        f"    WHERE {predicate} AND {SAME_PLACE} AND {shown_in_turn_sql('m')}) x"
    )


def thread_neighbour_walk(request: RecallRequest, tenant: str, predicate: str) -> str | None:
    """The walk, for `memories.recall.contextual.register_neighbour_walk`: only where the organisation has a thread."""
    if not organisation_has_threads(request.organisation_id):
        return None
    return thread_neighbours_sql(tenant, predicate)
