"""An agent's token finds its agent, its organisation and sets its tenant under row-level security, with the hot
path on (one round trip, `lib.hot_path`) and off (Django's ORM)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.auth import token_authenticate
from accounts.models import AgentToken, Membership, hash_token
from accounts.services import agent_create, organisation_create, user_create
from tenancy.context import TenancyError
from tenancy.sql import APP_ROLE, TENANT_SETTING

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=[True, False], ids=["hot path", "plain"], autouse=True)
def hot_path(request, settings):
    settings.HOT_PATH = request.param
    return request.param


@pytest.fixture
def tenants():
    acme = organisation_create(slug="acme")
    globex = organisation_create(slug="globex")
    agent, raw = agent_create(organisation=acme, name="helper")
    agent_create(organisation=globex, name="other")
    return acme, agent, raw


def tenant_now() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT archivist_tenant()::text, (SELECT count(*) FROM accounts_agenttoken)")
        return cursor.fetchone()


def as_app_role():
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")


def test_the_token_is_found_with_its_agent_and_organisation_and_sets_the_tenant(tenants, hot_path):
    acme, agent, raw = tenants
    with transaction.atomic():
        as_app_role()
        with CaptureQueriesContext(connection) as queries:
            token = token_authenticate(token_hash=hash_token(raw), now=timezone.now())
            assert token.agent.name == "helper" and token.organisation.slug == "acme"  # read with it, no query
        assert len(queries.captured_queries) == (1 if hot_path else 3)  # the plain path: hash, token, tenant
        # The tenant is the token's organisation, and row-level security now shows that tenant's one token.
        assert tenant_now() == (str(acme.pk), 1)


def test_an_unknown_revoked_or_expired_token_finds_nothing_and_leaves_no_tenant(tenants):
    acme, agent, raw = tenants
    for presented in ("not-a-token", raw):
        with transaction.atomic():
            as_app_role()
            assert token_authenticate(token_hash=hash_token(presented + "x"), now=timezone.now()) is None
            assert tenant_now() == (None, 0)
    # A revoked or expired token stays readable by its own hash (that policy), but names no tenant.
    AgentToken.objects.filter(agent=agent).update(revoked_at=timezone.now())
    with transaction.atomic():
        as_app_role()
        assert token_authenticate(token_hash=hash_token(raw), now=timezone.now()) is None
        assert tenant_now()[0] is None
    AgentToken.objects.filter(agent=agent).update(revoked_at=None, expires_at=timezone.now())
    with transaction.atomic():
        as_app_role()
        assert token_authenticate(token_hash=hash_token(raw), now=timezone.now()) is None
        assert tenant_now()[0] is None


def test_the_token_is_looked_up_only_inside_a_transaction(tenants):
    with pytest.raises(TenancyError):
        token_authenticate(token_hash=hash_token(tenants[2]), now=timezone.now())


def _tenant_settings(queries) -> list[str]:
    return [query["sql"] for query in queries.captured_queries if TENANT_SETTING in query["sql"]]


def test_an_agents_request_sets_its_tenant_once_and_a_persons_through_the_middleware(tenants, settings, hot_path):
    settings.EMBEDDER = "none"
    acme, agent, raw = tenants
    client = Client()
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/api/v1/places", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 200
    # The middleware sets nothing in a new transaction; the token's read sets the tenant (in its own statement
    # on the hot path).
    settings_made = _tenant_settings(queries)
    assert len(settings_made) == 1 and ("accounts_agenttoken" in settings_made[0]) is hot_path
    # The positive control: a signed-in person's tenant is set by the middleware, from the membership.
    client.force_login(user_create(username="mona", organisation=acme, role=Membership.Role.MEMBER))
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/v1/memories").status_code == 200
    settings_made = _tenant_settings(queries)
    assert settings_made and not any("accounts_agenttoken" in sql for sql in settings_made)
