"""One transaction per request, with the tenant set inside it; any answer of 400 or above rolls it back, so a
refused or failed request leaves nothing half-written."""

# A middleware rather than ATOMIC_REQUESTS: a signed-in person's tenant must be set before the view runs, and
# Django's per-view transaction opens after every middleware. So it opens here, right after
# AuthenticationMiddleware: a person's organisation (from their membership) is set here, an agent's by
# `accounts.auth.BearerTokenAuthentication` inside this same transaction. The health check and /metrics, which
# report the database's state themselves, pass straight through.

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError, connection, transaction
from django.http import HttpRequest, JsonResponse
from django.urls import reverse

from accounts.models import Membership
from lib.api.errors import DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE, error_json
from tenancy import standby
from tenancy.context import tenant_activate
from tenancy.sql import OPERATOR, STEWARD

logger = logging.getLogger(__name__)

# /metrics reports the database's state itself, as the health check does.
PASS_THROUGH_PATHS = ("/healthz", "/metrics")


def unavailable_response() -> JsonResponse:
    """A database that cannot be reached: 503 in the one error shape."""
    return error_json(
        "unavailable", DATABASE_UNAVAILABLE, status=503, headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)}
    )


def session_scope(request: HttpRequest) -> tuple[str, str]:
    """(organisation id, cross-tenant exception) for a signed-in person, or ("", "")."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_active:
        return "", ""
    organisation_id, role = Membership.objects.filter(user_id=user.pk).values_list(
        "organisation_id", "role"
    ).first() or (
        "",
        "",
    )
    cross_tenant = STEWARD if role == Membership.Role.STEWARD else ""
    # The operators' console: superusers see every organisation, in the admin only.
    if user.is_superuser and user.is_staff and request.path.startswith(reverse("admin:index")):
        cross_tenant = OPERATOR
    return str(organisation_id or ""), cross_tenant


class TenantTransactionMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        if request.path in PASS_THROUGH_PATHS:
            return self.get_response(request)
        try:
            # Every tenant setting is SET LOCAL, so a new transaction starts with none: only a
            # nested one (a test's wrapping transaction) must clear what an earlier request set.
            fresh = not connection.in_atomic_block
            with transaction.atomic():
                organisation_id, cross_tenant = session_scope(request)
                if organisation_id or cross_tenant or not fresh:
                    tenant_activate(organisation_id=organisation_id, cross_tenant=cross_tenant)
                response = self.respond(request, organisation_id, cross_tenant)
                if response.status_code >= 400:
                    transaction.set_rollback(True)
        except (OperationalError, InterfaceError) as error:
            logger.warning("database unavailable for %s %s: %s", request.method, request.path, error)
            return unavailable_response()
        return response

    def respond(self, request: HttpRequest, organisation_id: str, cross_tenant: str):
        """The view's answer; with a standby configured, from the standby where the view reads there, and
        asked again of the primary when the standby failed during it (standby reads are only reads)."""
        if not standby.standby_configured():
            return self.get_response(request)
        read = standby.StandbyRead(request, session_scope=(organisation_id, cross_tenant))
        request.standby_read = read  # type: ignore[attr-defined]  # the views that read there enter it
        try:
            response = self.get_response(request)
        finally:
            failed = read.leave()
        if failed:
            response = self.get_response(request)
        elif response.status_code < 400 and not read.used:
            standby.note_write_in_transaction()
        return response

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        """A page marked `reads_from_standby` reads there on GET, under the signed-in person's tenant."""
        read = standby.standby_of(request)
        if read is not None and request.method in ("GET", "HEAD") and getattr(view_func, "reads_from_standby", False):
            organisation_id, cross_tenant = read.session_scope
            read.enter(organisation_id=organisation_id, cross_tenant=cross_tenant)
        return None

    def process_exception(self, request: HttpRequest, exception: Exception):
        """A page (not the API, whose handler does this) that lost the database mid-request."""
        if isinstance(exception, (OperationalError, InterfaceError)):
            logger.warning("database lost during %s %s: %s", request.method, request.path, exception)
            return unavailable_response()
        return None
