"""Many remembers in one call, answered item by item: each item checked in Python, the rows kept inserted in
one statement, and each item in its own savepoint only when the database refuses that statement."""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, IntegrityError, transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions
from rest_framework.response import Response

from accounts.auth import Principal
from lib.api.docs import PLACE_EXAMPLE, PLACE_MEANS, answered, asked, write_schema
from lib.api.errors import error_body, refusal_sentence, validation_fields
from lib.api.idempotency import ItemKeys, KeyReused, without_key
from memories.api import serializers as s
from memories.api.base import MemoryApi
from memories.api.docs import MEMORY_EXAMPLE, REMEMBER_EXAMPLE
from memories.api.memories import remember, remember_write
from memories.errors import LimitReached
from memories.models import Memory
from memories.places import PlaceConflict, PlaceInTurn, PlaceNotFound
from memories.writer import Together, Writer, remembering_together

logger = logging.getLogger(__name__)

# What refuses one item and keeps the rest; anything else fails the whole call.
REFUSALS = (exceptions.ValidationError, DjangoValidationError, LimitReached, PlaceNotFound, KeyReused, PlaceConflict)
# What the database answers when a trigger or CHECK refuses a row Python let through.
DATABASE_REFUSALS = (IntegrityError, DataError)
ENDPOINT = "remember"  # items share their key space with `POST /api/v1/memories`
BATCH_ENDPOINT = "remember-batch"  # the request's own `Idempotency-Key`, for the whole call


class MemoryBatchApi(MemoryApi):
    """Up to 100 remembers in one call, each answered on its own: one refusal keeps the rest."""

    @write_schema(
        operation_id="memories_remember_batch",
        description=(
            "Each item is a remember request as `POST /api/v1/memories` takes it, plus its own optional "
            "`idempotency_key`. Each is checked under the same rules (scopes, the live-fact cap, the database's "
            "constraints) and the ones kept are written together: the answer is 200 with a status per item, `created`, "
            "`duplicate` (its key was seen: the first write's memory) or `refused` (the API's error, naming "
            f"the fields). {PLACE_MEANS} Embedding happens after, in the workers. An `Idempotency-Key` header "
            "covers the whole call: a retry with it answers the first call's items again, writing nothing."
        ),
        request=s.BatchInputSerializer,
        responses={200: s.BatchOutputSerializer, 400: OpenApiResponse(description="Not 1 to 100 items.")},
        examples=[
            asked(
                "Two facts",
                {
                    "items": [
                        {**REMEMBER_EXAMPLE, "idempotency_key": "import-1"},
                        {"body": "", "place": PLACE_EXAMPLE},
                    ]
                },
            ),
            answered(
                "One created, one refused",
                {
                    "created": 1,
                    "duplicates": 0,
                    "refused": 1,
                    "items": [
                        {
                            "index": 0,
                            "status": "created",
                            "memory": {**MEMORY_EXAMPLE, "scope_reason": ""},
                            "error": None,
                        },
                        {
                            "index": 1,
                            "status": "refused",
                            "memory": None,
                            "error": {
                                "error": "invalid",
                                "detail": "body: A memory needs text; the body is empty or only whitespace.",
                                "fields": {"body": ["A memory needs text; the body is empty or only whitespace."]},
                            },
                        },
                    ],
                },
            ),
        ],
    )
    def post(self, request):
        """Remember up to 100 facts in one call, each answered on its own."""
        principal = self.principal()
        items = self.validated(s.BatchInputSerializer)["items"]
        batch = Batch(api=self, principal=principal)

        def write():
            answers = batch.written(items)
            return batch_response(answers), None, {"items": [answer_record(answer) for answer in answers]}

        return self.idempotent(BATCH_ENDPOINT, write, replay_batch)


def batch_response(answers: list[s.BatchItem]) -> Response:
    return Response(s.BatchOutputSerializer(answers, context={"now": timezone.now()}).data)


def answer_record(answer: s.BatchItem) -> dict:
    """What a retry of the whole call needs of one item's answer: ids, statuses and errors, never a body."""
    memory = answer.memory
    return {
        "index": answer.index,
        "status": answer.status,
        "memory": str(memory.pk) if memory is not None else None,
        "extra": {"scope_reason": memory.scope_reason, "notice": memory.notice} if memory is not None else {},
        # As JSON text: a refusal may quote what was refused, and jsonb cannot hold a NUL that a string can.
        "error": json.dumps(answer.error) if answer.error is not None else None,
    }


def replay_batch(_memory, extra: dict) -> Response:
    """The first call's answer again, each memory as it is now (a receipt once erased), read in one query."""
    rows = Memory.objects.select_related("agent", "written_by").in_bulk(
        [record["memory"] for record in extra["items"] if record["memory"] is not None], field_name="pk"
    )
    by_id = {str(pk): row for pk, row in rows.items()}
    answers = [
        s.BatchItem(
            index=record["index"],
            status=record["status"],
            memory=s.remembered(by_id[record["memory"]], record["extra"]) if record["memory"] in by_id else None,
            error=json.loads(record["error"]) if record["error"] is not None else None,
        )
        for record in extra["items"]
    ]
    return batch_response(answers)


@dataclass
class Batch:
    """One batch call's items, written by the principal: in one insert, or item by item."""

    api: MemoryApi
    principal: Principal
    # One serializer for every item: building one per item would only rebuild the same fields (its errors
    # are the same either way: `run_validation` is what `is_valid` runs).
    checker: s.BatchItemInputSerializer = field(default_factory=s.BatchItemInputSerializer)

    def together(self, *, insert_later: bool):
        principal = self.principal
        return remembering_together(
            organisation_id=principal.organisation.pk, writer=Writer.of(principal.writer), insert_later=insert_later
        )

    def place(self, data: dict, places: dict[str, PlaceInTurn]) -> tuple[PlaceInTurn, str | None]:
        """The item's place, looked up once per batch: (it, its key if this item looked it up)."""
        place_key = json.dumps(data["place"], sort_keys=True)
        if place_key in places:
            return places[place_key], None
        resolved = self.api.resolve_place(data["place"])
        assert resolved is not None  # an item's place is required: its serializer refused the item otherwise
        places[place_key] = resolved
        return resolved, place_key

    def written(self, items: list[dict]) -> list[s.BatchItem]:
        """The items written in one insert, or item by item when the database refuses that insert."""
        try:
            with transaction.atomic():  # a savepoint: if the database refuses the one insert, this pass is undone
                return self.in_one_insert(items)
        except DATABASE_REFUSALS as error:
            logger.warning(
                "The database refused a batch of %d items in one insert (%s); writing each in its own savepoint",
                len(items),
                str(error).splitlines()[0],
            )
            return self.one_by_one(items)

    def in_one_insert(self, items: list[dict]) -> list[s.BatchItem]:
        """Every item checked in Python, then the rows kept, their keys and receipts inserted a statement each."""
        keys = ItemKeys.used(self.principal, ENDPOINT, items)
        places: dict[str, PlaceInTurn] = {}
        with self.together(insert_later=True) as together:
            answers = [self.checked(index, item, places, together, keys) for index, item in enumerate(items)]
        keys.save()
        return replayed(answers, keys)

    def checked(self, index: int, item: dict, places: dict, together: Together, keys: ItemKeys) -> s.BatchItem:
        """One item checked and kept for the batch's insert, or refused (nothing of it written)."""
        looked_up = None
        try:
            data = self.checker.run_validation(item)
            first_here = json.dumps(data["place"], sort_keys=True) not in places
            # Only a place's first sight may write (its record): that item's savepoint undoes it if refused.
            with together.savepoint() if first_here else nullcontext():
                resolved, looked_up = self.place(data, places)
                key, fingerprint = data.pop("idempotency_key", None), keys.fingerprint(item)
                if keys.seen(index, key, fingerprint):
                    return s.BatchItem(index=index, status="duplicate")  # its memory comes with `replayed`
                memory, extra = remember_write(
                    principal=self.principal, data=data, resolved=resolved, together=together
                )
                keys.claim(key, fingerprint, memory, extra)
        except REFUSALS as error:
            places.pop(looked_up, None)  # recorded by this refused item, so rolled back with it
            return refusal(index, error)
        return s.BatchItem(index=index, status="created", memory=s.remembered(memory, extra))

    def one_by_one(self, items: list[dict]) -> list[s.BatchItem]:
        """Each item in its own savepoint, so the database's refusal of one keeps the others."""
        places: dict[str, PlaceInTurn] = {}
        with self.together(insert_later=False) as together:
            return [self.saved(index, item, places, together) for index, item in enumerate(items)]

    def saved(self, index: int, item: dict, places: dict, together: Together) -> s.BatchItem:
        looked_up = None
        try:
            with together.savepoint():
                data = self.checker.run_validation(item)
                resolved, looked_up = self.place(data, places)
                memory, replayed = remember(
                    principal=self.principal,
                    data=data,
                    resolved=resolved,
                    key=data.pop("idempotency_key", None),
                    fingerprinted=without_key(item),
                    together=together,
                )
        except (*REFUSALS, *DATABASE_REFUSALS) as error:
            places.pop(looked_up, None)  # recorded by this refused item, so rolled back with it
            return refusal(index, error)
        return s.BatchItem(index=index, status="duplicate" if replayed else "created", memory=memory)


def replayed(answers: list[s.BatchItem], keys: ItemKeys) -> list[s.BatchItem]:
    """The duplicates answered with their first write's memory as it is now, read in one query."""
    rows = Memory.objects.select_related("agent", "written_by").in_bulk(
        [row.memory_id for row in keys.replays.values()]
    )
    return [
        replace(answer, memory=s.remembered(rows[row.memory_id], row.response_extra))
        if (row := keys.replays.get(answer.index)) is not None
        else answer
        for answer in answers
    ]


def refusal(index: int, error: Exception) -> s.BatchItem:
    """A refused item, answered as a lone request would have been refused."""
    if isinstance(error, (exceptions.ValidationError, DjangoValidationError)):
        fields = validation_fields(error)
        return refused_item(index, "invalid", refusal_sentence(fields, "The item"), fields)
    if isinstance(error, LimitReached):
        return refused_item(index, "limit_reached", str(error), {})
    if isinstance(error, PlaceNotFound):
        return refused_item(index, "not_found", error.message, {})
    if isinstance(error, (KeyReused, PlaceConflict)):
        return refused_item(index, "conflict", error.message, {error.field: [error.message]})
    if isinstance(error, DATABASE_REFUSALS):
        return refused_item(index, "invalid", *database_refusal(error))
    raise error  # not in REFUSALS


def refused_item(index: int, code: str, detail: str, fields: dict) -> s.BatchItem:
    return s.BatchItem(index=index, status="refused", error=error_body(code, detail, fields))


def database_refusal(error: Exception) -> tuple[str, dict]:
    """The database's refusal of one item, named by the constraint (or trigger) that made it."""
    diagnosis = getattr(error.__cause__, "diag", None)
    message = (getattr(diagnosis, "message_primary", None) or str(error)).strip()
    rule = getattr(diagnosis, "constraint_name", None) or message.split(":", 1)[0]
    return f"{rule}: the database refused this item ({message}).", {rule: [message]}
