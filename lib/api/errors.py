"""The one shape of an API error: `{"error": code, "detail": sentence, "fields": {name: [messages]}}`,
for every error, Django's and DRF's."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from lib.api.body import too_large_message
from lib.errors import ApplicationError

logger = logging.getLogger(__name__)


DATABASE_RETRY_AFTER_SECONDS = 5
DATABASE_UNAVAILABLE = "The database is unavailable; nothing was written. Try again shortly."

# Every code an error body's `error` can hold; the schema declares them as the `ErrorCode` enum, and the
# clients make one error class per code from it (tests/test_error_codes_enum.py finds each code the code base
# answers with). `error` is any other status DRF answers.
ERROR_CODES = (
    "invalid",
    "unauthenticated",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "not_acceptable",
    "conflict",
    "limit_reached",
    "length_required",
    "too_large",
    "unsupported_media_type",
    "throttled",
    "unavailable",
    "server_error",
    "error",
)
OTHER_ERROR = "error"

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


def error_body(code: str, detail: str, fields: dict | None = None) -> dict:
    """The one error shape; every answer that refuses builds its body here."""
    return {"error": code, "detail": detail, "fields": fields or {}}


def error_response(code: str, detail: str, fields: dict | None = None, http_status: int = 400, headers=None):
    return Response(error_body(code, detail, fields), status=http_status, headers=headers)


def error_json(code: str, detail: str, fields: dict | None = None, *, status: int, headers=None) -> JsonResponse:
    """The one error shape outside DRF: for a middleware or a Django handler, which answer before any view."""
    return JsonResponse(error_body(code, detail, fields), status=status, headers=headers)


def _django_detail(error: DjangoValidationError) -> dict:
    return error.message_dict if hasattr(error, "error_dict") else {"non_field_errors": error.messages}


def validation_fields(error: exceptions.ValidationError | DjangoValidationError) -> dict[str, list[str]]:
    """A DRF or Django validation error's messages as {dotted.field: [messages]}."""
    return flatten_errors(_django_detail(error) if isinstance(error, DjangoValidationError) else error.detail)


def refusal_sentence(fields: dict[str, list[str]], refused: str = "The request") -> str:
    """A validation refusal in one sentence: the field's message when one field was refused, else their names."""
    names = sorted(fields)
    if len(names) == 1 and fields[names[0]]:
        return f"{names[0]}: {fields[names[0]][0]}"
    return f"{refused} was refused: check {', '.join(names)}." if names else f"{refused} was refused."


def exception_handler(exc, context):
    """Maps every error, the application's, Django's and DRF's, to the one JSON shape."""
    if isinstance(exc, ApplicationError):
        return error_response(exc.code, exc.message, exc.fields(), http_status=exc.http_status)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(_django_detail(exc))
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        # Django refuses the body before reading it (DATA_UPLOAD_MAX_MEMORY_SIZE).
        message = too_large_message(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return error_response(
            "too_large", message, {"Content-Length": [message]}, http_status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
        )
    elif isinstance(exc, (OperationalError, InterfaceError)):
        # The database went away mid-request (a restart, a failover): nothing was
        # committed, so the caller may retry; the request's transaction rolls back.
        return error_response(
            "unavailable",
            DATABASE_UNAVAILABLE,
            http_status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        )
    # Imported here: DRF imports this module (its authentication classes) while
    # rest_framework.views is still loading, so a top-level import would be circular.
    from rest_framework import views

    response = views.exception_handler(exc, context)
    if response is None:
        return None
    code = _CODES.get(response.status_code, OTHER_ERROR)
    if isinstance(exc, exceptions.ValidationError):
        fields = validation_fields(exc)
        detail = refusal_sentence(fields)
    else:
        detail = str(exc.detail) if hasattr(exc, "detail") else str(exc)
        # Whatever refused the body or its type names what it refused.
        if isinstance(exc, exceptions.ParseError):
            fields = {"json": [f"Malformed JSON: {detail}"]}
        elif isinstance(exc, exceptions.UnsupportedMediaType):
            fields = {"Content-Type": [f"Send application/json; {detail}".rstrip(".") + "."]}
        else:
            fields = {}
    response.data = error_body(code, detail, fields)
    return response
