"""The one family of application errors: a refusal a service raises and every API answers in the one shape.

A service raises `ApplicationError` (or a subclass an app defines) with a code, a sentence and the field it
is about; `lib.api.errors.exception_handler` answers it with `http_status`. Imports nothing, so any layer may
raise one.
"""

from __future__ import annotations


class ApplicationError(Exception):
    code = "invalid"
    http_status = 400

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field

    def fields(self) -> dict[str, list[str]]:
        return {self.field: [self.message]} if self.field else {}
