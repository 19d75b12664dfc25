"""Who is asking: the authenticated caller as a `Principal`, an agent (Bearer token) or an account holder
(session). The organisation always comes from here, never from a request body."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.permissions import BasePermission

from accounts.labels import receipt_actor_label
from accounts.models import Agent, AgentToken, Membership, Organisation, User, hash_token
from lib import hot_path
from lib.api.bearer import MALFORMED_AUTHORIZATION, bearer_token
from lib.hot_path import ModelColumns, ReadWithToken
from tenancy.context import TenancyError, tenant_activate, token_lookup_activate
from tenancy.sql import CROSS_TENANT_SETTING, STEWARD, TENANT_SETTING, TOKEN_HASH_SETTING

logger = logging.getLogger(__name__)


# Names a request body may never use: the tenant and the owner come from the principal.
PRINCIPAL_FIELDS = ("organisation", "organisation_id", "org", "owner", "owner_id", "user_id")


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
    def is_restricted(self) -> bool:
        """An agent whose token an owner restricted to listed channels and people."""
        return self.token is not None and self.token.restricted

    def refuse_if_restricted(self, action: str) -> None:
        """403 naming the restriction: a restricted token acts in its places only, never on the organisation's
        records (people, places' kinds and people) or on a subject as a whole (export, erasure)."""
        if self.is_restricted:
            raise exceptions.PermissionDenied(
                f"This token is restricted to listed channels and people; a restricted token may not {action}."
            )

    @property
    def is_owner(self) -> bool:
        return self.role == Membership.Role.OWNER

    @property
    def is_steward(self) -> bool:
        return self.role == Membership.Role.STEWARD

    @property
    def writer(self) -> Agent | User:
        """The agent or the person who is calling, as a write names its author."""
        writer = self.agent or self.user
        assert writer is not None  # a principal is an agent or a person
        return writer

    @property
    def label(self) -> str:
        return receipt_actor_label(agent=self.agent, user=self.user)


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


_TOKEN = ModelColumns(AgentToken, "t")
_AGENT = ModelColumns(Agent, "a")
_ORGANISATION = ModelColumns(Organisation, "o")

# The hot path's token read (`lib.hot_path`): the token-hash setting, then the usable token with its agent and
# organisation, whose select list names the token's organisation as the transaction's tenant as it reads the
# row; one round trip of SQL made once. Row-level security shows the first statement's hash only: no usable
# token, no row, and the tenant stays unset, as on the plain path.
TOKEN_READ_SQL = (
    "SELECT set_config(%s, %s, true); "
    "SELECT set_config(%s, t.organisation_id::text, true) || set_config(%s, '', true), "
    f"{_TOKEN.select}, {_AGENT.select}, {_ORGANISATION.select} "
    "FROM accounts_agenttoken t "
    "JOIN accounts_organisation o ON o.id = t.organisation_id "
    "JOIN accounts_agent a ON a.id = t.agent_id "
    "WHERE t.token_hash = %s AND t.revoked_at IS NULL AND t.expires_at > %s"
)


def token_authenticate(*, token_hash: str, now, with_token: ReadWithToken | None = None) -> AgentToken | None:
    """The usable token with this hash, with its agent and organisation; the token's organisation becomes this
    transaction's tenant. None, and no tenant, for an unknown, revoked or expired token."""
    if not connection.in_atomic_block:
        raise TenancyError("The tenant is set per transaction; call this inside transaction.atomic().")
    if hot_path.enabled():
        return _token_in_one_round_trip(token_hash, now, with_token)
    # Row-level security shows this transaction the one token whose hash it names, before any tenant is set.
    token_lookup_activate(token_hash=token_hash)
    token = AgentToken.objects.usable(now).select_related("agent", "organisation").filter(token_hash=token_hash).first()
    if token is not None:
        tenant_activate(organisation_id=token.organisation_id)
    return token


def _token_in_one_round_trip(token_hash: str, now, with_token: ReadWithToken | None) -> AgentToken | None:
    params = (TOKEN_HASH_SETTING, token_hash, TENANT_SETTING, CROSS_TENANT_SETTING, token_hash, now)
    with connection.cursor() as cursor:
        if with_token is None:
            cursor.execute(TOKEN_READ_SQL, params)
        else:
            cursor.execute(f"{TOKEN_READ_SQL}; {with_token.sql}", (*params, *with_token.params))
        cursor.nextset()  # the token's row, after the setting's
        row = cursor.fetchone()
        if row is not None and with_token is not None:
            cursor.nextset()
            with_token.take(cursor.fetchone())
    if row is None:
        return None
    token = _TOKEN.build(row, 1, connection)
    token.agent = _AGENT.build(row, 1 + len(_TOKEN), connection)
    token.organisation = _ORGANISATION.build(row, 1 + len(_TOKEN) + len(_AGENT), connection)
    return token


class BearerTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>`, one space, nothing else (`lib.api.bearer`); the token names the
    organisation and the agent. Any other Authorization header is refused, never skipped for the session."""

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        raw = bearer_token(header)
        if raw is None:
            raise exceptions.AuthenticationFailed(MALFORMED_AUTHORIZATION)
        now = timezone.now()
        # On the hot path, a view with a read to send in the same round trip (the place its body names) offers it.
        view = (getattr(request, "parser_context", None) or {}).get("view")
        offer = getattr(view, "read_with_token", None) if hot_path.enabled() else None
        token = token_authenticate(token_hash=hash_token(raw), now=now, with_token=offer(request) if offer else None)
        if token is None:
            raise exceptions.AuthenticationFailed("The token is unknown, revoked or expired.")
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
