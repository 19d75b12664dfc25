"""Refusals of the memory store, each an `ApplicationError` the API answers in the one error shape."""

from __future__ import annotations

from lib.api.idempotency import IDEMPOTENCY_HEADER
from lib.errors import ApplicationError


class LimitReached(ApplicationError):
    """A writer holds the most live facts it may; it must forget before it remembers.

    The API answers 409 `limit_reached`; consolidation stops keeping facts and
    says so in the thread's status.
    """

    code = "limit_reached"
    http_status = 409


class TurnConflict(ApplicationError):
    """A turn id or idempotency key was used before for something else: 409, or 422 for a reused key."""

    code = "conflict"

    def __init__(self, field: str, message: str):
        super().__init__(message, field)

    @property
    def http_status(self) -> int:  # type: ignore[override]  # a key reused for another request is 422
        return 422 if self.field == IDEMPOTENCY_HEADER else 409
