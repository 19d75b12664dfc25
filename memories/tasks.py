"""Memory tasks: embedding, the sweep that catches what the write path could not enqueue,
re-embedding, the nightly purge, tenants' vector indexes and old idempotency keys. Each takes ids
(or nothing), is safe to run twice, and leaves the work to the module it names.

Every task's name is pinned: a message already queued keeps finding its task when code moves."""

from __future__ import annotations

import logging
import random
from datetime import timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db.models.functions import Length
from django.utils import timezone

from lib.api.idempotency import idempotency_keys_expire
from memories import maintenance
from memories.embeddings import writes
from memories.recall.hnsw import vector_index_maintain

logger = logging.getLogger(__name__)

# Messages are acknowledged after the task, and given back when the worker
# dies mid-task, so a kill -9 loses nothing; redelivery is made harmless by
# the conditional UPDATE in memories.embeddings.writes.
RELIABLE: dict[str, Any] = {"acks_late": True, "reject_on_worker_lost": True}
BACKOFF_CAP_SECONDS = 3600
PROGRESS_EVERY_ROWS = 500


def backoff_seconds(retries: int) -> float:
    """Exponential backoff with jitter, so rows that failed together do not retry together."""
    base = settings.EMBEDDING_RETRY_BACKOFF_SECONDS * (2**retries)
    return min(BACKOFF_CAP_SECONDS, base) * random.uniform(0.8, 1.2)


def _progress_logger(label: str):
    state = {"logged": 0}

    def log(done: int, total: int, *_rest) -> None:
        if total >= PROGRESS_EVERY_ROWS and (done - state["logged"] >= PROGRESS_EVERY_ROWS or done == total):
            state["logged"] = done
            logger.info("%s: %d/%d rows (%.0f%%)", label, done, total, 100 * done / total)

    return log


@shared_task(name="memories.tasks.embed_memories", bind=True, max_retries=None, **RELIABLE)
def embed_memories(self, ids: list[str]) -> dict:
    """Embed these memories with the current model; rows already embedded are counted, not redone."""
    outcome = writes.memory_embed(ids=ids, progress=_progress_logger(f"embed {self.request.id}"))
    logger.info(
        "embedded %d, already embedded %d, held by another worker %d, failed %d",
        len(outcome.embedded),
        outcome.already_embedded,
        outcome.claimed_elsewhere,
        len(outcome.failed),
    )
    retry = writes.ids_to_retry(outcome.failed)
    if retry:
        countdown = backoff_seconds(self.request.retries)
        logger.warning("retrying %d rows in %.1fs: %s", len(retry), countdown, next(iter(outcome.failed.values())))
        raise self.retry(args=[retry], countdown=countdown, queue="embed")
    return {
        "embedded": len(outcome.embedded),
        "already_embedded": outcome.already_embedded,
        "failed": len(outcome.failed),
    }


@shared_task(name="memories.tasks.sweep_embeddings", **RELIABLE)
def sweep_embeddings(grace_seconds: int | None = None) -> int:
    """Queue every live row whose vector is missing or of an old model (the beat sweep)."""
    grace = settings.EMBEDDING_SWEEP_GRACE_SECONDS if grace_seconds is None else grace_seconds
    pending = writes.memories_needing_embedding(now=timezone.now(), grace=timedelta(seconds=grace))
    ids = writes.by_length(pending.values_list("pk", Length("body"))[: settings.EMBEDDING_SWEEP_LIMIT])
    size = settings.EMBEDDING_BATCH_SIZE
    for start in range(0, len(ids), size):
        embed_memories.apply_async(args=[ids[start : start + size]], queue="embed")
    if ids:
        logger.info("sweep queued %d rows that lacked a current vector", len(ids))
    return len(ids)


@shared_task(name="memories.tasks.reembed_memories", **RELIABLE)
def reembed_memories() -> dict:
    """Move every live row to the current model, logging progress; recall keeps serving."""
    outcome = writes.memories_reembed(progress=_progress_logger("reembed"))
    return {"embedded": len(outcome.embedded), "failed": len(outcome.failed)}


@shared_task(name="memories.tasks.purge_expired_memories", **RELIABLE)
def purge_expired_memories() -> int:
    """Nightly: empty rows expired for longer than MEMORY_PURGE_GRACE_DAYS, keeping a receipt."""
    purged = maintenance.memories_purge_expired(grace_days=settings.MEMORY_PURGE_GRACE_DAYS)
    logger.info("purged %d expired memories", purged)
    return purged


@shared_task(name="memories.vector_index_maintain", ignore_result=True, acks_late=True)
def vector_index_maintain_task() -> dict:
    return vector_index_maintain()


@shared_task(name="memories.idempotency_keys_expire", ignore_result=True, acks_late=True)
def idempotency_keys_expire_task() -> int:
    return idempotency_keys_expire()
