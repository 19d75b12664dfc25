"""Consolidation tasks: one thread by id, and the beat sweep for threads behind their watermark.

Each task's name is pinned to the module path it was first registered under, so that
messages already queued (and config/celery.py's routes and beat) find it wherever the
code moves. threads.ingest enqueues consolidation by name and never imports this module.
"""

from __future__ import annotations

import logging

from celery import shared_task

from memories.tasks import RELIABLE, backoff_seconds
from threads import consolidation, selectors
from threads.extractors.base import ExtractionError

logger = logging.getLogger(__name__)

SWEEP_LIMIT = 1_000


@shared_task(name="threads.tasks.consolidate_thread", bind=True, max_retries=8, **RELIABLE)
def consolidate_thread(self, thread_id: int) -> dict:
    """Consolidate the thread's new events; running it twice writes nothing new (the watermark)."""
    try:
        result = consolidation.thread_consolidate(thread_id=thread_id)
    except ExtractionError as error:
        consolidation.thread_record_failure(thread_id=thread_id, error=str(error))
        if not error.transient:
            logger.error("thread %s not consolidated: %s", thread_id, error)
            return {"error": str(error)}
        raise self.retry(countdown=backoff_seconds(self.request.retries), queue="consolidate") from error
    return {
        "events": result.events,
        "written": len(result.written),
        "superseded": len(result.superseded),
        "duplicates": result.duplicates,
        "watermark": result.watermark,
    }


@shared_task(name="threads.tasks.sweep_consolidation", **RELIABLE)
def sweep_consolidation() -> int:
    """Queue every thread whose events are past its watermark (events ingested while the broker was down)."""
    ids = list(selectors.threads_behind().values_list("pk", flat=True)[:SWEEP_LIMIT])
    for thread_id in ids:
        consolidate_thread.apply_async(args=[thread_id], queue="consolidate")
    if ids:
        logger.info("consolidation sweep queued %d threads", len(ids))
    return len(ids)
