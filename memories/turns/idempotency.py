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
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.utils import timezone
from rest_framework.response import Response

from accounts.auth import Principal
from accounts.models import Organisation
from lib.api.errors import error_response
from lib.api.idempotency import IDEMPOTENCY_HEADER, idempotency_key_of
from lib.inserts import insert_statement
from memories.errors import TurnConflict
from memories.models import IdempotencyKey, Memory

REUSED_KEY_MESSAGE = "This Idempotency-Key was used for a different request; use a new key for a new write."
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
    claim = IdempotencyKey(
        organisation=organisation, principal=principal, key=key, endpoint=endpoint, request_sha256=fingerprint
    )
    # The key row and the write are kept or undone together; in the caller's transaction no savepoint is
    # needed for that: an error inside marks it for rollback.
    with transaction.atomic(savepoint=False):
        claimed = _claimed(claim)
        if claimed is not None:
            result, memory, extra = write()
            IdempotencyKey.objects.filter(pk=claimed).update(memory=memory, response_extra=extra)
            return result, False
        row = IdempotencyKey.objects.get(organisation=organisation, principal=principal, key=key)
    if row.endpoint != endpoint or row.request_sha256 != fingerprint:
        raise TurnConflict(IDEMPOTENCY_HEADER, REUSED_KEY_MESSAGE)
    memory = Memory.objects.filter(pk=row.memory_id, organisation=organisation).first() if row.memory_id else None
    return replay(memory, row.response_extra), True


def _claimed(claim: IdempotencyKey) -> int | None:
    """Insert the key row, one round trip: its id, or None when the key is taken. A concurrent first use of the
    key waits on the unique index until that transaction ends (then it is taken, or free again)."""
    statement, params = insert_statement(claim, ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(f"{statement} RETURNING id", params)
        row = cursor.fetchone()
    return row[0] if row is not None else None


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


def principal_key(principal: Principal) -> str:
    """Whose key space an Idempotency-Key lives in: the agent (by id), or the person."""
    return principal.label if principal.agent is None else f"agent:{principal.agent.pk}"


def idempotent_response(request, principal: Principal, endpoint: str, write, replay) -> Response:
    """Every write honours `Idempotency-Key`: `write()` gives (response, memory or None, extra), a retry with
    the same key gets `replay(memory, extra)`. Without a key the write simply runs."""
    key = idempotency_key_of(request)
    if key is None:
        return write()[0]
    data = {
        "path": {name: str(value) for name, value in request.parser_context["kwargs"].items()},
        "body": request.data,
    }
    try:
        response, replayed = idempotent_call(
            organisation=principal.organisation,
            principal=principal_key(principal),
            key=key,
            endpoint=endpoint,
            fingerprint=request_fingerprint(endpoint=endpoint, data=data),
            write=write,
            replay=replay,
        )
    except TurnConflict as conflict:
        return error_response(conflict.code, conflict.message, conflict.fields(), conflict.http_status)
    if replayed:
        response["Idempotent-Replayed"] = "true"
    return response


def plain_json(data) -> dict:
    """Ids, counts and dates as JSON, for a key row's `extra` (never a memory's text)."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))
