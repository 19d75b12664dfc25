"""API conventions every app follows: who is asking, and the one shape of an error.

- `Principal` is the authenticated caller: an agent (Bearer token) or an account
  holder (session). The organisation always comes from here, never from a body.
- Every error is `{"error": code, "detail": sentence, "fields": {name: [messages]}}`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError
from django.http import Http404
from django.utils import timezone
from rest_framework import exceptions, status
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, get_authorization_header
from rest_framework.parsers import JSONParser
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle

from accounts.models import Agent, AgentToken, Membership, Organisation, User, hash_token
from tenancy.context import tenant_activate, token_lookup_activate
from tenancy.sql import STEWARD

logger = logging.getLogger(__name__)

# Names a request body may never use: the tenant and the owner come from the principal.
PRINCIPAL_FIELDS = ("organisation", "organisation_id", "org", "owner", "owner_id", "user_id")
DATABASE_RETRY_AFTER_SECONDS = 5


@dataclass(frozen=True)
class Principal:
    """Who is calling, resolved once per request."""

    organisation: Organisation
    agent: Agent | None = None
    user: User | None = None
    role: str | None = None
    token: AgentToken | None = None  # an agent's token: its directory right and its channel restriction

    @property
    def is_agent(self) -> bool:
        return self.agent is not None

    @property
    def is_owner(self) -> bool:
        return self.role == Membership.Role.OWNER

    @property
    def is_steward(self) -> bool:
        return self.role == Membership.Role.STEWARD

    @property
    def label(self) -> str:
        return f"agent:{self.agent.name}" if self.agent else f"user:{self.user.username}"


class AgentPrincipalUser:
    """What `request.user` is for an agent: authenticated, not an account."""

    is_authenticated = True
    is_active = True
    is_staff = False
    is_superuser = False
    is_anonymous = False

    def __init__(self, agent: Agent):
        self.agent = agent
        self.pk = None
        self.username = f"agent:{agent.name}"

    def __str__(self) -> str:
        return self.username


class BearerTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>`; the token names the organisation and the agent."""

    keyword = b"bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("The Authorization header must be 'Bearer <token>'.")
        try:
            raw = parts[1].decode()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The token is not valid text.") from None
        now = timezone.now()
        token_hash = hash_token(raw)
        # Row-level security shows this transaction the one token with this hash, nothing else.
        token_lookup_activate(token_hash=token_hash)
        token = (
            AgentToken.objects.usable(now).select_related("agent", "organisation").filter(token_hash=token_hash).first()
        )
        if token is None:
            raise exceptions.AuthenticationFailed("The token is unknown, revoked or expired.")
        tenant_activate(organisation_id=token.organisation_id)
        # Recording last use at most once a minute keeps a hot token from writing on every call.
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            AgentToken.objects.filter(pk=token.pk).update(last_used_at=now)
        request.principal = Principal(organisation=token.organisation, agent=token.agent, token=token)
        return AgentPrincipalUser(token.agent), token

    def authenticate_header(self, request):
        return 'Bearer realm="archivist"'


class MemberSessionAuthentication(SessionAuthentication):
    """Session auth for account holders; their organisation is their membership's."""

    def authenticate(self, request):
        result = super().authenticate(request)
        if result is None:
            return None
        user = result[0]
        membership = user.membership()
        if membership is None:
            raise exceptions.PermissionDenied("This account belongs to no organisation.")
        tenant_activate(
            organisation_id=membership.organisation_id,
            cross_tenant=STEWARD if membership.role == Membership.Role.STEWARD else "",
        )
        request.principal = Principal(organisation=membership.organisation, user=user, role=membership.role)
        return result


class HasPrincipal(BasePermission):
    message = "Authenticate with a Bearer token or a session."

    def has_permission(self, request, view):
        return (
            getattr(request._request, "principal", None) is not None or getattr(request, "principal", None) is not None
        )


def principal_of(request) -> Principal:
    principal = getattr(request, "principal", None) or getattr(request._request, "principal", None)
    if principal is None:
        raise exceptions.NotAuthenticated()
    return principal


def refuse_principal_fields(data) -> None:
    """A body naming the tenant or the owner is refused, saying why."""
    if not isinstance(data, dict):
        return
    named = [name for name in PRINCIPAL_FIELDS if name in data]
    if named:
        raise exceptions.ValidationError(
            {
                name: ["The organisation and owner come from your credentials; a request may not name them."]
                for name in named
            }
        )


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


class SafeJSONParser(JSONParser):
    """JSON too deep for the parser is malformed input (400), not a server error (RecursionError)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON nested too deeply.") from None


class PrincipalRateThrottle(SimpleRateThrottle):
    """Requests per token (an agent) or per signed-in person, at `MEMORY_API_RATE`; past it, 429 with Retry-After.

    The counts live in the shared cache (Redis), so every web worker counts the
    same requests. If the cache cannot be reached the request is let through
    and the failure logged: an outage of the limiter must not become one of the API.
    """

    scope = "principal"

    def get_rate(self):
        return settings.MEMORY_API_RATE

    def get_cache_key(self, request, view):
        principal = getattr(request, "principal", None)
        if principal is None:
            return None
        ident = f"token:{request.auth.pk}" if principal.agent is not None else f"user:{principal.user.pk}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except Exception as error:  # noqa: BLE001 - any cache failure lets the request through
            logger.warning("rate limiter unavailable, letting %s through: %s", request.path, error)
            return True


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state."
    default_code = "conflict"


def _flatten(detail, prefix: str = "") -> dict[str, list[str]]:
    """DRF error detail (nested dicts and lists) as {dotted.field: [messages]}."""
    fields: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            for inner, messages in _flatten(value, name).items():
                fields.setdefault(inner, []).extend(messages)
    elif isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            fields[prefix or "non_field_errors"] = [str(item) for item in detail]
        else:
            for index, item in enumerate(detail):
                for inner, messages in _flatten(item, f"{prefix}.{index}" if prefix else str(index)).items():
                    fields.setdefault(inner, []).extend(messages)
    else:
        fields[prefix or "non_field_errors"] = [str(detail)]
    return fields


def error_response(code: str, detail: str, fields: dict | None = None, http_status: int = 400, headers=None):
    return Response({"error": code, "detail": detail, "fields": fields or {}}, status=http_status, headers=headers)


def exception_handler(exc, context):
    """Maps every error, Django's and DRF's, to the one JSON shape."""
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
        fields = _flatten(exc.detail)
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
