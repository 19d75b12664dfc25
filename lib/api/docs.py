"""What the schema shows of every API: the error example, a place, and the decorators for writes and lists.

An endpoint's summary and description are its method's docstring (the first paragraph, then the rest), so
the words a reader of the code sees are the words of the schema.
"""

from __future__ import annotations

import inspect

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema

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


def asked(name: str, value) -> OpenApiExample:
    """A request body the schema shows as an example."""
    return OpenApiExample(name, value=value, request_only=True)


def answered(name: str, value, *status_codes: str) -> OpenApiExample:
    """A response the schema shows as an example, for `status_codes` (every status when none is named)."""
    return OpenApiExample(name, value=value, response_only=True, status_codes=list(status_codes) or None)


def docstring_text(method, schema: dict) -> dict[str, str]:
    """The schema's `summary` and `description` of an endpoint, from its method's docstring.

    Each paragraph's lines are joined by spaces (the docstring is wrapped for the code, not the reader). A
    summary or description the decorator is given (one quoting a constant) wins over the docstring's.
    """
    doc = inspect.getdoc(method)
    if "summary" in schema:
        return {}
    if not doc:
        raise TypeError(f"{method.__qualname__} needs a docstring: its first paragraph is the schema's summary")
    paragraphs = [" ".join(part.split()) for part in doc.split("\n\n")]
    return {"summary": paragraphs[0].rstrip("."), "description": "\n\n".join(paragraphs[1:])}


KEY_REUSED = OpenApiResponse(description="The Idempotency-Key was used for a different request.")


def write_schema(*, conflict: str | None = None, **schema):
    """`extend_schema` for a write endpoint, described by its docstring.

    It shows the `Idempotency-Key` header and the 422 for a key reused on another request (every write
    honours the header), and `conflict` as the write's 409.
    """
    schema["parameters"] = [IDEMPOTENCY_PARAMETER, *schema.get("parameters", [])]
    responses = {422: KEY_REUSED, **schema.get("responses", {})}
    if conflict:
        responses[409] = OpenApiResponse(description=conflict)
    schema["responses"] = dict(sorted(responses.items()))
    return lambda method: extend_schema(**{**docstring_text(method, schema), **schema})(method)


def read_schema(**schema):
    """`extend_schema` for a read endpoint, described by its docstring."""
    return lambda method: extend_schema(**{**docstring_text(method, schema), **schema})(method)


def list_schema(operation_id: str, serializer, example: tuple[str, dict]):
    """`extend_schema` for a read answering a list of `serializer`'s rows; `example` is one row, named."""
    name, row = example
    return read_schema(
        operation_id=operation_id,
        responses={200: serializer(many=True)},
        examples=[answered(name, [row])],
    )
