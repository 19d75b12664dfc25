"""The one shape of an API error: `{"error": code, "detail": sentence, "fields": {name: [messages]}}`,
for every error, Django's and DRF's."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from lib.errors import ApplicationError

logger = logging.getLogger(__name__)


DATABASE_RETRY_AFTER_SECONDS = 5

_CODES = {
    status.HTTP_400_BAD_REQUEST: "invalid",
    status.HTTP_401_UNAUTHORIZED: "unauthenticated",
    status.HTTP_403_FORBIDDEN: "forbidden",
    status.HTTP_404_NOT_FOUND: "not_found",
    status.HTTP_405_METHOD_NOT_ALLOWED: "method_not_allowed",
    status.HTTP_406_NOT_ACCEPTABLE: "not_acceptable",
    status.HTTP_409_CONFLICT: "conflict",
    status.HTTP_413_REQUEST_ENTITY_TOO_LARGE: "too_large",
    status.HTTP_415_UNSUPPORTED_MEDIA_TYPE: "unsupported_media_type",
    status.HTTP_429_TOO_MANY_REQUESTS: "throttled",
    status.HTTP_503_SERVICE_UNAVAILABLE: "unavailable",
}


def flatten_errors(detail, prefix: str = "") -> dict[str, list[str]]:
    """DRF error detail (nested dicts and lists) as {dotted.field: [messages]}."""
    fields: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            for inner, messages in flatten_errors(value, name).items():
                fields.setdefault(inner, []).extend(messages)
    elif isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            fields[prefix or "non_field_errors"] = [str(item) for item in detail]
        else:
            for index, item in enumerate(detail):
                for inner, messages in flatten_errors(item, f"{prefix}.{index}" if prefix else str(index)).items():
                    fields.setdefault(inner, []).extend(messages)
    else:
        fields[prefix or "non_field_errors"] = [str(detail)]
    return fields


def error_response(code: str, detail: str, fields: dict | None = None, http_status: int = 400, headers=None):
    return Response({"error": code, "detail": detail, "fields": fields or {}}, status=http_status, headers=headers)


def exception_handler(exc, context):
    """Maps every error, the application's, Django's and DRF's, to the one JSON shape."""
    if isinstance(exc, ApplicationError):
        return error_response(exc.code, exc.message, exc.fields(), http_status=exc.http_status)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        # Django refuses the body before reading it (DATA_UPLOAD_MAX_MEMORY_SIZE).
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        message = f"The request body is larger than {limit} bytes, the most this API reads; nothing was read."
        return error_response(
            "too_large", message, {"Content-Length": [message]}, http_status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
        )
    elif isinstance(exc, (OperationalError, InterfaceError)):
        # The database went away mid-request (a restart, a failover): nothing was
        # committed, so the caller may retry; the request's transaction rolls back.
        return error_response(
            "unavailable",
            "The database is unavailable; nothing was written. Try again shortly.",
            http_status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        )
    # Imported here: DRF imports this module (its authentication classes) while
    # rest_framework.views is still loading, so a top-level import would be circular.
    from rest_framework import views

    response = views.exception_handler(exc, context)
    if response is None:
        return None
    code = _CODES.get(response.status_code, "error")
    if isinstance(exc, exceptions.ValidationError):
        fields = flatten_errors(exc.detail)
        names = ", ".join(sorted(fields))
        detail = f"The request was refused: check {names}." if names else "The request was refused."
        first = next(iter(fields.values()), [])
        if len(fields) == 1 and first:
            detail = f"{next(iter(fields))}: {first[0]}"
    else:
        detail = str(exc.detail) if hasattr(exc, "detail") else str(exc)
        # Whatever refused the body or its type names what it refused.
        if isinstance(exc, exceptions.ParseError):
            fields = {"json": [f"Malformed JSON: {detail}"]}
        elif isinstance(exc, exceptions.UnsupportedMediaType):
            fields = {"Content-Type": [f"Send application/json; {detail}".rstrip(".") + "."]}
        else:
            fields = {}
    response.data = {"error": code, "detail": detail, "fields": fields}
    return response
