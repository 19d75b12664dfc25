"""Domain errors of the memory store, in a module every layer may import (it imports nothing)."""

from __future__ import annotations


class LimitReached(Exception):
    """A writer holds the most live facts it may; it must forget before it remembers.

    The API answers 409 `limit_reached`; consolidation stops keeping facts and
    says so in the thread's status.
    """


class TurnConflict(Exception):
    """A turn id or idempotency key was used before for something else."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message
