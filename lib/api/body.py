"""A request body read within its endpoint's own limit, where that differs from the API's (DATA_UPLOAD_MAX_MEMORY_SIZE).

Django checks a body against one global limit when it is first read; an endpoint that takes larger bodies
(thread events carry whole chat messages) reads it here first, under its own limit, so Django's check is not
reached and every other endpoint keeps the global one.
"""

from __future__ import annotations

import io

from django.http import HttpRequest

from lib.errors import ApplicationError


def too_large_message(limit: int) -> str:
    return f"The request body is larger than {limit} bytes, the most this endpoint reads; nothing was read."


class BodyTooLarge(ApplicationError):
    code = "too_large"
    http_status = 413

    def __init__(self, limit: int):
        super().__init__(too_large_message(limit), "Content-Length")


def body_read_within(request: HttpRequest, limit: int) -> None:
    """Read the body whole, refusing it by its Content-Length before reading when it is over `limit` bytes
    (a chunked body never gets here: RefuseChunkedBodiesMiddleware answers it with 411)."""
    if "_body" in request.__dict__ or request._read_started:  # type: ignore[attr-defined]
        return
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > limit:
        raise BodyTooLarge(limit)
    body = request.read(length)
    # What HttpRequest.body keeps once read: the bytes, and a stream over them for parsers that read one.
    request._body = body
    request._stream = io.BytesIO(body)
