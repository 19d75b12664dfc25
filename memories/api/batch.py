"""Many remembers in one call, each in its own savepoint, answered item by item."""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
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
from memories.api.memories import memory_output, remember_write
from memories.errors import LimitReached, TurnConflict
from memories.models import Memory
from memories.places import PlaceConflict, PlaceInTurn, PlaceNotFound
from memories.turns.idempotency import (
    idempotent_write,
    principal_key,
    request_fingerprint,
)


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
        answers = [self.item(principal, index, item, places) for index, item in enumerate(items)]
        counts = {
            outcome: sum(a["status"] == outcome for a in answers) for outcome in ("created", "duplicate", "refused")
        }
        return Response(
            {
                "created": counts["created"],
                "duplicates": counts["duplicate"],
                "refused": counts["refused"],
                "items": answers,
            }
        )

    def item(self, principal: Principal, index: int, item: dict, places: dict) -> dict:
        try:
            with transaction.atomic():
                data = self.validated(s.BatchItemInputSerializer, data=item)
                place_key = json.dumps(data["place"], sort_keys=True)
                if place_key not in places:
                    places[place_key] = self.resolve_place(data["place"])
                resolved = places[place_key]
                key = data.pop("idempotency_key", None)

                def write():
                    return remember_write(principal=principal, data=data, resolved=resolved)

                if key is None:
                    (memory, extra), replayed = write(), False
                else:
                    body = {name: value for name, value in item.items() if name != "idempotency_key"}
                    memory, extra, replayed = idempotent_write(
                        organisation=principal.organisation,
                        principal=principal_key(principal),
                        key=key,
                        endpoint="remember",
                        fingerprint=request_fingerprint(endpoint="remember", data=body),
                        write=write,
                    )
        except (exceptions.ValidationError, DjangoValidationError) as error:
            return batch_refusal(index, "invalid", error)
        except LimitReached as error:
            return {
                "index": index,
                "status": "refused",
                "memory": None,
                "error": error_shape("limit_reached", str(error), {}),
            }
        except PlaceNotFound as error:
            return refused_item(index, error_shape("not_found", error.message, {}))
        except (TurnConflict, PlaceConflict) as error:
            fields = {error.field: [error.message]}
            return {
                "index": index,
                "status": "refused",
                "memory": None,
                "error": error_shape("conflict", error.message, fields),
            }
        if replayed:
            memory = Memory.objects.select_related("agent", "written_by").get(pk=memory.pk)
        output = {
            **memory_output(memory, timezone.now(), scope_reason=extra.get("scope_reason", "")),
            "notice": extra.get("notice", ""),
        }
        return {"index": index, "status": "duplicate" if replayed else "created", "memory": output, "error": None}


def error_shape(code: str, detail: str, fields: dict) -> dict:
    return {"error": code, "detail": detail, "fields": fields}


def batch_refusal(index: int, code: str, error) -> dict:
    """A refused item in the API's one error shape, its fields named as a lone request would name them."""
    if isinstance(error, DjangoValidationError):
        detail = error.message_dict if hasattr(error, "error_dict") else {"non_field_errors": error.messages}
    else:
        detail = error.detail
    fields = flatten_errors(detail)
    names = sorted(fields)
    sentence = (
        f"{names[0]}: {fields[names[0]][0]}" if len(names) == 1 else f"The item was refused: check {', '.join(names)}."
    )
    return {"index": index, "status": "refused", "memory": None, "error": error_shape(code, sentence, fields)}


def refused_item(index: int, error: dict) -> dict:
    return {"index": index, "status": "refused", "memory": None, "error": error}
