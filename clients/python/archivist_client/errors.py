"""One exception per error the API answers with, all carrying the API's `detail` and `fields`.

Every Archivist error body is `{"error": code, "detail": sentence, "fields": {name: [messages]}}`;
`error_for` turns a response into the matching exception.
"""

from __future__ import annotations

from typing import Any

import httpx


class ArchivistError(Exception):
    """Any error answered by the API (or a transport failure, with `status` 0)."""

    def __init__(
        self,
        detail: str,
        *,
        status: int = 0,
        code: str = "error",
        fields: dict[str, list[str]] | None = None,
        body: Any = None,
    ):
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.code = code
        self.fields = fields or {}
        self.body = body

    def __str__(self) -> str:
        if not self.fields:
            return self.detail
        named = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in self.fields.items())
        return f"{self.detail} ({named})" if named not in self.detail else self.detail


class Refused(ArchivistError):
    """400 (and 413, 415): the request was refused; `fields` names what was wrong and the limit."""


class Unauthenticated(ArchivistError):
    """401: the token is missing, unknown, revoked or expired."""


class Forbidden(ArchivistError):
    """403: the caller may see this but not do that."""


class NotFound(ArchivistError):
    """404: nothing the caller can see has this id (another tenant's rows answer the same)."""


class Forgotten(ArchivistError):
    """410: the memory was forgotten; `receipt` says who erased it, when and why (no body)."""

    def __init__(self, detail: str, *, receipt: dict | None = None, memory: Any = None, **kwargs):
        super().__init__(detail, **kwargs)
        self.receipt = receipt or {}
        self.memory = memory


class Conflict(ArchivistError):
    """409 or 422: conflicts with the current state (an idempotency key reused for another request, a turn id
    rendered with another question, a place's record)."""


class LimitReached(Conflict):
    """409 `limit_reached`: a cap was reached (e.g. an agent's live facts): forget before remembering."""


class Throttled(ArchivistError):
    """429: too many requests; `retry_after` seconds until the next is let through."""

    def __init__(self, detail: str, *, retry_after: float | None = None, **kwargs):
        super().__init__(detail, **kwargs)
        self.retry_after = retry_after


class Unavailable(ArchivistError):
    """503 (or no answer at all): nothing was written; try again after `retry_after` seconds."""

    def __init__(self, detail: str, *, retry_after: float | None = None, **kwargs):
        super().__init__(detail, **kwargs)
        self.retry_after = retry_after


_BY_STATUS: dict[int, type[ArchivistError]] = {
    400: Refused,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    410: Forgotten,
    413: Refused,
    415: Refused,
    422: Conflict,
    429: Throttled,
    503: Unavailable,
}


def retry_after_seconds(response: httpx.Response) -> float | None:
    raw = response.headers.get("Retry-After")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None


def error_for(response: httpx.Response) -> ArchivistError:
    """The exception for an error response (any status of 400 or more)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "error" in body:
        code, detail, fields = body.get("error", "error"), body.get("detail", ""), body.get("fields") or {}
    else:
        code, detail, fields = "error", response.text[:500] or response.reason_phrase, {}
    kwargs = {"status": response.status_code, "code": code, "fields": fields, "body": body}
    status = response.status_code
    if status == 410:
        # A forgotten memory answers with its receipt in place of the memory.
        receipt = body.get("receipt") if isinstance(body, dict) else None
        return Forgotten("This memory was forgotten.", receipt=receipt, memory=body, **{**kwargs, "code": "gone"})
    if status == 409:
        return (LimitReached if code == "limit_reached" else Conflict)(detail, **kwargs)
    if status in (429, 503):
        return _BY_STATUS[status](detail, retry_after=retry_after_seconds(response), **kwargs)
    return _BY_STATUS.get(status, ArchivistError)(detail or f"HTTP {status}", **kwargs)
