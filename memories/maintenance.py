"""Upkeep the beat schedule runs: the purge of long-expired rows."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.utils import timezone

from memories.models import Memory, MemoryAudit
from memories.services import memory_redact

logger = logging.getLogger(__name__)

PURGE_PAGE = 500


def memories_purge_expired(*, grace_days: int, now: datetime | None = None) -> int:
    """Empty every row that expired more than `grace_days` ago: body, vector and search
    vector go, and the row stays as a receipt with a `purge` audit entry.

    Expired rows already drop out of recall at read time; the grace period
    leaves them readable to their owners for a while before the content goes.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(days=grace_days)
    purged = 0
    while True:
        page = list(
            Memory.objects.filter(redacted_at__isnull=True, expires_at__lt=cutoff)
            .only("id", "organisation_id", "expires_at")
            .order_by("expires_at", "pk")[:PURGE_PAGE]
        )
        if not page:
            return purged
        for memory in page:
            memory_redact(
                memory=memory,
                reason=f"expired on {memory.expires_at:%Y-%m-%d}; purged after {grace_days} days' grace",
                action=MemoryAudit.Action.PURGE,
                now=now,
            )
            purged += 1
        logger.info("purged %d expired memories so far", purged)
