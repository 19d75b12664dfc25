"""Many remembers in one call, each in its own savepoint, answered item by item."""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.response import Response

from accounts.auth import Principal
from lib.api.docs import PLACE_EXAMPLE, PLACE_MEANS
from lib.api.errors import flatten_errors
from memories.api import serializers as s
from memories.api.base import MemoryApi
from memories.api.docs import MEMORY_EXAMPLE, REMEMBER_EXAMPLE
from memories.api.memories import remember
from memories.errors import LimitReached, TurnConflict
from memories.places import PlaceConflict, PlaceInTurn, PlaceNotFound
from memories.services import Together, remembering_together

# What refuses one item and keeps the rest; anything else fails the whole call.
REFUSALS = (exceptions.ValidationError, DjangoValidationError, LimitReached, PlaceNotFound, TurnConflict, PlaceConflict)


class MemoryBatchApi(MemoryApi):
    """Up to 100 remembers in one call, each in its own savepoint: one refusal keeps the rest."""

    @extend_schema(
        operation_id="memories_remember_batch",
        summary="Remember up to 100 facts in one call, each answered on its own",
        description=(
            "Each item is a remember request as `POST /api/v1/memories` takes it, plus its own optional "
            "`idempotency_key`. Each is written in its own savepoint under the same rules (scopes, the "
            "live-fact cap, the database's constraints): the answer is 200 with a status per item, `created`, "
            "`duplicate` (its key was seen: the first write's memory) or `refused` (the API's error, naming "
            f"the fields). {PLACE_MEANS} Embedding happens after, in the workers."
        ),
        request=s.BatchInputSerializer,
        responses={200: s.BatchOutputSerializer, 400: OpenApiResponse(description="Not 1 to 100 items.")},
        examples=[
            OpenApiExample(
                "Two facts",
                value={
                    "items": [
                        {**REMEMBER_EXAMPLE, "idempotency_key": "import-1"},
                        {"body": "", "place": PLACE_EXAMPLE},
                    ]
                },
                request_only=True,
            ),
            OpenApiExample(
                "One created, one refused",
                value={
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
                response_only=True,
            ),
        ],
    )
    def post(self, request):
        principal = self.principal()
        items = self.validated(s.BatchInputSerializer)["items"]
        places: dict[str, PlaceInTurn] = {}  # one lookup per place named in the batch
        # The writer's cap is locked and counted once for the batch, and its rows queued for embedding once.
        with remembering_together(
            organisation_id=principal.organisation.pk, agent=principal.agent, person=principal.user
        ) as together:
            answers = [self.item(principal, index, item, places, together) for index, item in enumerate(items)]
        return Response(s.BatchOutputSerializer(answers, context={"now": timezone.now()}).data)

    def item(self, principal: Principal, index: int, item: dict, places: dict, together: Together) -> s.BatchItem:
        resolved_here = None
        try:
            with together.savepoint():
                data = self.validated(s.BatchItemInputSerializer, data=item)
                place_key = json.dumps(data["place"], sort_keys=True)
                if place_key not in places:
                    resolved_here = place_key
                    places[place_key] = self.resolve_place(data["place"])
                memory, replayed = remember(
                    principal=principal,
                    data=data,
                    resolved=places[place_key],
                    key=data.pop("idempotency_key", None),
                    fingerprinted={name: value for name, value in item.items() if name != "idempotency_key"},
                )
        except REFUSALS as error:
            # A place first recorded by a refused item was rolled back with it: the next item resolves it again.
            places.pop(resolved_here, None)
            return refusal(index, error)
        return s.BatchItem(index=index, status="duplicate" if replayed else "created", memory=memory)


def refusal(index: int, error: Exception) -> s.BatchItem:
    """A refused item, answered as a lone request would have been refused."""
    if isinstance(error, (exceptions.ValidationError, DjangoValidationError)):
        return refused(index, "invalid", *invalid_fields(error))
    if isinstance(error, LimitReached):
        return refused(index, "limit_reached", str(error), {})
    if isinstance(error, PlaceNotFound):
        return refused(index, "not_found", error.message, {})
    if isinstance(error, (TurnConflict, PlaceConflict)):
        return refused(index, "conflict", error.message, {error.field: [error.message]})
    raise error  # not in REFUSALS


def refused(index: int, code: str, detail: str, fields: dict) -> s.BatchItem:
    """A refused item, in the API's one error shape."""
    return s.BatchItem(index=index, status="refused", error={"error": code, "detail": detail, "fields": fields})


def invalid_fields(error) -> tuple[str, dict]:
    """A refusal's sentence and its fields, named as a lone request would name them."""
    if isinstance(error, DjangoValidationError):
        detail = error.message_dict if hasattr(error, "error_dict") else {"non_field_errors": error.messages}
    else:
        detail = error.detail
    fields = flatten_errors(detail)
    names = sorted(fields)
    sentence = (
        f"{names[0]}: {fields[names[0]][0]}" if len(names) == 1 else f"The item was refused: check {', '.join(names)}."
    )
    return sentence, fields
