"""Refusals of the memory store, each an `ApplicationError` the API answers in the one error shape."""

from __future__ import annotations

from lib.errors import ApplicationError


class LimitReached(ApplicationError):
    """A writer holds the most live facts it may; it must forget before it remembers.

    The API answers 409 `limit_reached`; consolidation stops keeping facts and
    says so in the thread's status.
    """

    code = "limit_reached"
    http_status = 409


class TurnConflict(ApplicationError):
    """A turn id was used before for a different request: 409. A reused Idempotency-Key is
    `lib.api.idempotency.KeyReused`."""

    code = "conflict"
    http_status = 409

    def __init__(self, field: str, message: str):
        super().__init__(message, field)
