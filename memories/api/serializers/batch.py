"""Batch remember: up to a hundred facts in one call, each answered on its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rest_framework import serializers

from memories.api.serializers.base import Annotated, OutputSerializer, StrictSerializer, derived
from memories.api.serializers.memories import RememberedOutputSerializer, RememberInputSerializer

BATCH_MAX_ITEMS = 100


class BatchItemInputSerializer(RememberInputSerializer):
    idempotency_key = serializers.RegexField(
        r"^[\x21-\x7e]{1,200}$",
        required=False,
        help_text="This item's own Idempotency-Key: an item sent again with it is answered `duplicate`.",
        error_messages={"invalid": "An idempotency key is 1 to 200 visible ASCII characters."},
    )


class BatchInputSerializer(StrictSerializer):
    # Each item is checked on its own (a refusal answers that item), so here they are only objects.
    items = serializers.ListField(
        child=serializers.DictField(),
        min_length=1,
        max_length=BATCH_MAX_ITEMS,
        help_text=f"1 to {BATCH_MAX_ITEMS} remember requests, each as `POST /api/v1/memories` takes it.",
        error_messages={
            "min_length": "Send at least one item.",
            "max_length": f"At most {BATCH_MAX_ITEMS} items per call; send the rest in another.",
        },
    )


class BatchErrorOutputSerializer(OutputSerializer):
    error = serializers.CharField()
    detail = serializers.CharField()
    fields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))  # type: ignore[assignment]  # the error shape's `fields`


@dataclass(frozen=True)
class BatchItem:
    """One item's answer: its memory (`remembered`) once written, or the error that refused it."""

    index: int
    status: str  # created, duplicate or refused
    memory: Annotated | None = None
    error: dict | None = None


class BatchItemOutputSerializer(OutputSerializer):
    index = serializers.IntegerField(help_text="The item's position in `items`, from 0.")
    status = serializers.ChoiceField(choices=["created", "duplicate", "refused"])
    memory = RememberedOutputSerializer(allow_null=True, help_text="The memory written (or first written).")
    error = BatchErrorOutputSerializer(allow_null=True, help_text="Why the item was refused, in the API's error shape.")


def status_count(status: str) -> Callable[[list[BatchItem], dict], int]:
    return lambda items, context: sum(item.status == status for item in items)


class BatchOutputSerializer(OutputSerializer):
    # A batch's answer, from its items' `BatchItem`s in order.
    created = derived(serializers.IntegerField, status_count("created"))
    duplicates = derived(serializers.IntegerField, status_count("duplicate"))
    refused = derived(serializers.IntegerField, status_count("refused"))
    items = BatchItemOutputSerializer(many=True, source="*")
