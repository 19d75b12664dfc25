"""`Idempotency-Key` on every write: the header, and a retry with the same key answered from the first write
instead of writing twice, for one request or for each item of a batch."""

# The key row keeps what a retry needs to answer again and nothing of what a memory said: the memory's id (a
# retry after an erasure shows the receipt, not the erased text) and a small `extra` of ids and counts the
# caller chooses. It is inserted in the write's transaction, so a concurrent retry waits on the unique index
# until the first commits, then replays it. The model is `settings.IDEMPOTENCY_KEY_MODEL`: lib imports no app.

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from django.apps import apps
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models, transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions
from rest_framework.response import Response

from lib.api.errors import error_response
from lib.errors import ApplicationError
from lib.inserts import insert_statement

if TYPE_CHECKING:  # only the type: lib imports no app
    from accounts.auth import Principal

IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,200}$")
KEY_MESSAGE = "An Idempotency-Key is 1 to 200 visible ASCII characters."
REUSED_KEY_MESSAGE = "This Idempotency-Key was used for a different request; use a new key for a new write."
IDEMPOTENCY_PARAMETER = OpenApiParameter(
    IDEMPOTENCY_HEADER,
    {"type": "string", "pattern": "^[!-~]{1,200}$", "maxLength": 200},
    OpenApiParameter.HEADER,
    description=(
        "Retrying with the same key answers from the first write instead of writing again "
        "(`Idempotent-Replayed: true`); the same key for a different request is refused with 422."
    ),
)
T = TypeVar("T")


class KeyReused(ApplicationError):
    """The key was used before for a different request: 422, and nothing is written."""

    code = "conflict"
    http_status = 422

    def __init__(self):
        super().__init__(REUSED_KEY_MESSAGE, IDEMPOTENCY_HEADER)


def key_model() -> Any:
    """The model a key row is (`IDEMPOTENCY_KEY_MODEL`); it has a nullable `memory` foreign key."""
    return apps.get_model(settings.IDEMPOTENCY_KEY_MODEL)


def idempotency_key_of(request) -> str | None:
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is not None and not IDEMPOTENCY_KEY_PATTERN.match(key):
        raise exceptions.ValidationError({IDEMPOTENCY_HEADER: [KEY_MESSAGE]})
    return key


def request_fingerprint(*, endpoint: str, data) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{endpoint}\n{canonical}".encode()).hexdigest()


def principal_key(principal: Principal) -> str:
    """Whose key space an Idempotency-Key lives in: the agent (by id), or the person."""
    return principal.label if principal.agent is None else f"agent:{principal.agent.pk}"


def idempotent_call(
    *,
    organisation: models.Model,
    principal: str,
    key: str,
    endpoint: str,
    fingerprint: str,
    write: Callable[[], tuple[T, Any, dict[str, Any]]],
    replay: Callable[[Any, dict[str, Any]], T],
) -> tuple[T, bool]:
    """Run `write()` once per key. `write` returns (result, memory or None, extra); a retry gets
    `replay(memory, extra)`. Returns (result, replayed)."""
    model = key_model()
    claim = model(
        organisation=organisation, principal=principal, key=key, endpoint=endpoint, request_sha256=fingerprint
    )
    # The key row and the write are kept or undone together; in the caller's transaction no savepoint is
    # needed for that: an error inside marks it for rollback.
    with transaction.atomic(savepoint=False):
        claimed = _claimed(claim)
        if claimed is not None:
            result, memory, extra = write()
            model.objects.filter(pk=claimed).update(memory=memory, response_extra=extra)
            return result, False
        row = model.objects.select_related("memory").get(organisation=organisation, principal=principal, key=key)
    if row.endpoint != endpoint or row.request_sha256 != fingerprint:
        raise KeyReused()
    return replay(row.memory, row.response_extra), True


def _claimed(claim: models.Model) -> int | None:
    """Insert the key row, one round trip: its id, or None when the key is taken. A concurrent first use of the
    key waits on the unique index until that transaction ends (then it is taken, or free again)."""
    statement, params = insert_statement(claim, ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(f"{statement} RETURNING id", params)
        row = cursor.fetchone()
    return row[0] if row is not None else None


def idempotent_write(*, organisation, principal: str, key: str, endpoint: str, fingerprint: str, write):
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
    except KeyReused as reused:
        return error_response(reused.code, reused.message, reused.fields(), reused.http_status)
    if replayed:
        response["Idempotent-Replayed"] = "true"
    return response


def idempotency_keys_expire(*, older_than: timedelta = timedelta(days=1), now: datetime | None = None) -> int:
    now = now or timezone.now()
    deleted, _ = key_model().objects.filter(created_at__lt=now - older_than).delete()
    return deleted


def plain_json(data) -> dict:
    """Ids, counts and dates as JSON, for a key row's `extra` (never a memory's text)."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def without_key(item: dict) -> dict:
    """A batch item as a lone request would send it: its `idempotency_key` travels as the request's header."""
    return {name: value for name, value in item.items() if name != "idempotency_key"}


@dataclass
class ItemKeys:
    """A batch's per-item keys under one endpoint: those used before (read in one query), and those it claims
    (inserted together by `save`)."""

    endpoint: str
    owner: dict  # whose key space: the organisation and the principal
    seen_rows: dict[str, Any]
    claimed: list = field(default_factory=list)
    replays: dict[int, Any] = field(default_factory=dict)  # a duplicate's index → its key's row

    @classmethod
    def used(cls, principal: Principal, endpoint: str, items: list[dict]) -> ItemKeys:
        owner = {"organisation": principal.organisation, "principal": principal_key(principal)}
        named = {item["idempotency_key"] for item in items if isinstance(item.get("idempotency_key"), str)}
        rows = key_model().objects.filter(**owner, key__in=named) if named else []
        return cls(endpoint, owner, {row.key: row for row in rows})

    def fingerprint(self, item: dict) -> str:
        return request_fingerprint(endpoint=self.endpoint, data=without_key(item))

    def seen(self, index: int, key: str | None, fingerprint: str) -> bool:
        """Whether the item's key was used before by this request: it is answered with the first write's memory
        (`replays`). Used for another request, it is refused, as a lone request would be."""
        row = self.seen_rows.get(key) if key is not None else None
        if row is None:
            return False
        if row.endpoint != self.endpoint or row.request_sha256 != fingerprint:
            raise KeyReused()
        self.replays[index] = row
        return True

    def claim(self, key: str | None, fingerprint: str, memory, extra: dict) -> None:
        if key is None:
            return
        row = key_model()(**self.owner, key=key, endpoint=self.endpoint, request_sha256=fingerprint, memory=memory)
        row.response_extra = extra
        self.seen_rows[key] = row  # the same key again in this batch is its duplicate
        self.claimed.append(row)

    def save(self) -> None:
        key_model().objects.bulk_create(self.claimed)
