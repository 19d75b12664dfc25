"""The `Idempotency-Key` header: its form, how a request carries it, and how the schema shows it.

What a key does (a retry answers from the first write) is the store's: `memories.turns.idempotency`."""

from __future__ import annotations

import re

from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions

IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,200}$")
KEY_MESSAGE = "An Idempotency-Key is 1 to 200 visible ASCII characters."
IDEMPOTENCY_PARAMETER = OpenApiParameter(
    IDEMPOTENCY_HEADER,
    {"type": "string", "pattern": "^[!-~]{1,200}$", "maxLength": 200},
    OpenApiParameter.HEADER,
    description=(
        "Retrying with the same key answers from the first write instead of writing again "
        "(`Idempotent-Replayed: true`); the same key for a different request is refused with 422."
    ),
)


def idempotency_key_of(request) -> str | None:
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is not None and not IDEMPOTENCY_KEY_PATTERN.match(key):
        raise exceptions.ValidationError({IDEMPOTENCY_HEADER: [KEY_MESSAGE]})
    return key
