"""The token's read is prepared once per database session (`accounts.auth.TOKEN_READ`, issue 15 round six):
planned by the server once, and still under row-level security, refusing what it refused."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.auth import TOKEN_READ, token_authenticate
from accounts.models import AgentToken, hash_token
from accounts.services import agent_create, organisation_create
from lib.rows import numbered
from tenancy.sql import APP_ROLE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tenants():
    """Two organisations with an agent each: (acme, globex, acme's agent, its raw token, globex's raw token)."""
    acme, globex = (organisation_create(slug=slug) for slug in ("acme", "globex"))
    (agent, raw), (_, theirs) = (
        agent_create(organisation=acme, name="helper"),
        agent_create(organisation=globex, name="other"),
    )
    return acme, globex, agent, raw, theirs


def authenticated(raw: str) -> tuple[AgentToken | None, str | None, list[str]]:
    """As the application role: the token, the tenant it left, and the SQL sent."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        with CaptureQueriesContext(connection) as queries:
            token = token_authenticate(token_hash=hash_token(raw), now=timezone.now())
        with connection.cursor() as cursor:
            cursor.execute("SELECT archivist_tenant()::text")
            tenant = cursor.fetchone()[0]
    return token, tenant, [query["sql"] for query in queries.captured_queries]


def plans() -> tuple[int, int] | None:
    """The server's (generic, custom) plan counts of the session's prepared token read, or None without one."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE %s", [f"{TOKEN_READ.name}%"]
        )
        return cursor.fetchone()


def test_a_sessions_first_read_prepares_it_in_the_same_round_trip_and_the_others_only_execute_it(tenants):
    acme, globex, agent, raw, theirs = tenants
    connection.close()  # a new session
    token, tenant, sent = authenticated(raw)
    assert token is not None and tenant == str(acme.pk)
    assert len(sent) == 1 and "PREPARE accounts_agenttoken_usable" in sent[0]
    for _ in range(8):
        token, tenant, sent = authenticated(raw)
        assert token.agent.name == "helper" and tenant == str(acme.pk)
        assert len(sent) == 1 and "PREPARE" not in sent[0] and "EXECUTE accounts_agenttoken_usable" in sent[0]
    generic, custom = plans()
    assert generic > 0  # the server plans it once and runs that plan, not a plan per call
    # The positive control: a new connection is a new session, without the statement: it prepares again.
    connection.close()
    assert authenticated(raw)[0] is not None and plans() == (0, 1)


def test_the_prepared_read_refuses_a_revoked_or_expired_token_and_shows_no_other_organisation(tenants):
    acme, globex, agent, raw, theirs = tenants
    for _ in range(8):  # past the custom plans: what follows runs the generic plan
        assert authenticated(raw)[0] is not None
    assert plans()[0] > 0
    token, tenant, _ = authenticated(theirs)  # another organisation's token: its own tenant, its own agent
    assert tenant == str(globex.pk) and token.agent.name == "other"
    AgentToken.objects.filter(agent=agent).update(revoked_at=timezone.now())
    assert authenticated(raw)[:2] == (None, None)
    AgentToken.objects.filter(agent=agent).update(revoked_at=None, expires_at=timezone.now())
    assert authenticated(raw)[:2] == (None, None)
    assert authenticated(raw + "x")[:2] == (None, None)
    # The positive control: usable again, the same session's statement finds it.
    AgentToken.objects.filter(agent=agent).update(expires_at=timezone.now() + timezone.timedelta(days=1))
    assert authenticated(raw)[1] == str(acme.pk)


def test_a_request_rolled_back_keeps_the_statement_for_the_next(tenants, settings):
    settings.EMBEDDER = "none"
    acme, globex, agent, raw, theirs = tenants
    connection.close()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    refused = client.post("/api/v1/recall", {"question": "tea", "limit": 1000}, format="json")
    assert refused.status_code == 400  # its transaction rolled back, after the PREPARE
    assert plans() is not None  # a session's statement outlives the transaction that made it
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/v1/places").status_code == 200
    assert not any("PREPARE" in query["sql"] for query in queries.captured_queries)


def test_a_first_round_trip_that_failed_after_its_prepare_prepares_again_under_another_name(tenants, caplog):
    acme, globex, agent, raw, theirs = tenants
    connection.close()
    with pytest.raises(Exception), transaction.atomic():  # noqa: B017, PT011 - any failure of the round trip
        token_authenticate(token_hash=hash_token(raw), now="not a time")  # the PREPARE ran, the EXECUTE failed
    assert "the round trip preparing it failed" in caplog.text
    token, tenant, sent = authenticated(raw)
    assert token is not None and tenant == str(acme.pk)
    assert "PREPARE accounts_agenttoken_usable_" in sent[0]  # the name it may hold already is left alone
    token, tenant, sent = authenticated(raw)
    assert token is not None and "PREPARE" not in sent[0]


def test_a_statement_the_session_lost_fails_that_call_logged_and_the_next_prepares_it_again(tenants, caplog):
    acme, globex, agent, raw, theirs = tenants
    assert authenticated(raw)[0] is not None
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # behind its back
    with pytest.raises(Exception, match="does not exist"):
        authenticated(raw)
    assert "lost its prepared statement" in caplog.text
    token, tenant, sent = authenticated(raw)
    assert token is not None and tenant == str(acme.pk) and "PREPARE" in sent[0]


def test_a_body_is_numbered_in_order_and_one_with_another_percent_is_refused():
    assert numbered("SELECT %s, %s WHERE a = %s") == "SELECT $1, $2 WHERE a = $3"
    with pytest.raises(ValueError):
        numbered("SELECT %s WHERE a LIKE 'x%'")


def test_behind_a_transaction_pooler_the_read_is_sent_whole_and_refuses_the_same(tenants, monkeypatch):
    # Django's own setting for PgBouncer's transaction mode: a session's statements may land on another.
    acme, globex, agent, raw, theirs = tenants
    monkeypatch.setitem(connection.settings_dict, "DISABLE_SERVER_SIDE_CURSORS", True)
    connection.close()  # a new session, which would prepare (the control above)
    for _ in range(3):
        token, tenant, sent = authenticated(raw)
        assert token is not None and tenant == str(acme.pk)
        assert len(sent) == 1 and "PREPARE" not in sent[0] and "EXECUTE" not in sent[0]
        assert "FROM accounts_agenttoken t" in sent[0]
    assert plans() is None  # nothing was prepared in this session
    token, tenant, _ = authenticated("not-a-token")
    assert token is None and tenant is None
