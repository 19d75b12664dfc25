"""What the schema shows of every API: the error example, a place, and the decorators for writes and lists."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema

from lib.api.idempotency import IDEMPOTENCY_PARAMETER

ERROR_EXAMPLE = {
    "error": "invalid",
    "detail": "limit: limit is at most 40.",
    "fields": {"limit": ["limit is at most 40."]},
}
PLACE_EXAMPLE = {"channel": "C024BE91L", "kind": "dm", "people": ["mona"]}
PLACE_MEANS = (
    "`place` is where the turn happens (the channel's id in your chat system, its kind and the people in it): "
    "it decides which scopes may be recalled and written there."
)


def write_schema(**schema):
    """`extend_schema` for a write endpoint: it shows the `Idempotency-Key` header every write honours."""
    return extend_schema(parameters=[IDEMPOTENCY_PARAMETER, *schema.pop("parameters", [])], **schema)


def list_schema(*, operation_id: str, summary: str, description: str, serializer, example: tuple[str, dict]):
    """`extend_schema` for a read that answers a list of `serializer`'s rows; `example` is one row, named."""
    name, row = example
    return extend_schema(
        operation_id=operation_id,
        summary=summary,
        description=description,
        responses={200: serializer(many=True)},
        examples=[OpenApiExample(name, value=[row], response_only=True)],
    )
