"""`Idempotency-Key` for every write: a retry with the same key answers from the first write, never writes twice.

`idempotent_call` serves any write; `idempotent_write` is remember's form of it. The key row keeps
what a retry needs to answer again and nothing of what a memory said: the memory's id (a retry after an
erasure shows the receipt, not the erased text) and a small `extra` of ids and counts the caller chooses.
The key row is inserted in the write's transaction, so a concurrent retry waits on the unique index until
the first commits, then replays it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import transaction
from django.utils import timezone

from accounts.models import Organisation
from memories.errors import TurnConflict
from memories.models import IdempotencyKey, Memory

HEADER = "Idempotency-Key"
KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,200}$")
KEY_MESSAGE = "An Idempotency-Key is 1 to 200 visible ASCII characters."
T = TypeVar("T")


def idempotent_call(
    *,
    organisation: Organisation,
    principal: str,
    key: str,
    endpoint: str,
    fingerprint: str,
    write: Callable[[], tuple[T, Memory | None, dict[str, Any]]],
    replay: Callable[[Memory | None, dict[str, Any]], T],
) -> tuple[T, bool]:
    """Run `write()` once per key. `write` returns (result, memory or None, extra); a retry gets
    `replay(memory, extra)`. Returns (result, replayed)."""
    with transaction.atomic():
        row, created = IdempotencyKey.objects.get_or_create(
            organisation=organisation,
            principal=principal,
            key=key,
            defaults={"endpoint": endpoint, "request_sha256": fingerprint},
        )
        if not created:
            if row.endpoint != endpoint or row.request_sha256 != fingerprint:
                raise TurnConflict(
                    HEADER, "This Idempotency-Key was used for a different request; use a new key for a new write."
                )
            memory = Memory.objects.filter(pk=row.memory_id, organisation=organisation).first()
            return replay(memory, row.response_extra), True
        result, memory, extra = write()
        row.memory = memory
        row.response_extra = extra
        row.save(update_fields=["memory", "response_extra"])
        return result, False


def request_fingerprint(*, endpoint: str, data) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{endpoint}\n{canonical}".encode()).hexdigest()


def idempotent_write(*, organisation: Organisation, principal: str, key: str, endpoint: str, fingerprint: str, write):
    """Remember's form of `idempotent_call`: `write` returns (memory, extra); answers (memory, extra, replayed)."""

    def first():
        memory, extra = write()
        return (memory, extra), memory, extra

    (memory, extra), replayed = idempotent_call(
        organisation=organisation,
        principal=principal,
        key=key,
        endpoint=endpoint,
        fingerprint=fingerprint,
        write=first,
        replay=lambda memory, extra: (memory, extra),
    )
    return memory, extra, replayed


def idempotency_keys_expire(*, older_than: timedelta = timedelta(days=1), now: datetime | None = None) -> int:
    now = now or timezone.now()
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=now - older_than).delete()
    return deleted
