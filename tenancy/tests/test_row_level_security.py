"""Row-level security, checked from connections acting as the application's roles.

Rows are written (and committed) through the services as the owner; every
assertion reads through a separate connection that has `SET ROLE archivist_app`,
exactly as a web request's connection does.
"""

from __future__ import annotations

import psycopg
import pytest

from accounts.models import Membership
from accounts.models import hash_token as token_hash_of
from accounts.services import organisation_create, user_create
from tenancy.sql import APP_ROLE, MAINTENANCE_ROLE, OPERATOR, PROTECTED_TABLES, STEWARD
from tenancy.tests.helpers import count, organisations_seen, role_connection, scoped, tenant_with_everything

pytestmark = pytest.mark.django_db(transaction=True)

NETWORK_CLAIMS = {
    "memories_memory": "bucket = 'system' AND archivist_claim_admitted(id)",
    "admissions_admissionrecord": "archivist_claim_admitted(claim_id)",
}


@pytest.fixture
def tenants():
    stewardship = organisation_create(slug="stewardship")
    steward = user_create(username="stew", organisation=stewardship, role=Membership.Role.STEWARD)
    acme = tenant_with_everything("acme", steward=steward, decision="challenge")
    globex = tenant_with_everything("globex", steward=steward, decision="admit")
    return {"acme": acme, "globex": globex, "steward": steward, "stewardship": stewardship}


def test_every_protected_table_holds_rows_of_both_tenants_for_the_owner(tenants):
    acme, globex = str(tenants["acme"].organisation.pk), str(tenants["globex"].organisation.pk)
    with role_connection(role="") as owner:
        for table in PROTECTED_TABLES:
            assert {acme, globex} <= organisations_seen(owner, table), table


def test_a_query_without_a_tenant_filter_returns_only_the_current_tenants_rows(tenants):
    acme = str(tenants["acme"].organisation.pk)
    with role_connection() as app, scoped(app, organisation_id=acme):
        for table in PROTECTED_TABLES:
            # Another organisation's admitted claim, and its records, are the documented exception.
            network = NETWORK_CLAIMS.get(table)
            seen = organisations_seen(app, f"(SELECT * FROM {table} WHERE NOT ({network})) AS t" if network else table)
            assert seen == {acme}, table


def test_a_connection_with_no_tenant_set_sees_nothing(tenants):
    with role_connection() as app:
        for table in PROTECTED_TABLES:
            assert count(app, table) == 0, table
        with scoped(app):
            for table in PROTECTED_TABLES:
                assert count(app, table) == 0, table


def test_the_tenant_setting_ends_with_its_transaction(tenants):
    acme = str(tenants["acme"].organisation.pk)
    with role_connection() as app:
        with scoped(app, organisation_id=acme):
            assert count(app, "memories_memory") > 0
        # The same pooled connection, next request: nothing carried over.
        assert count(app, "memories_memory") == 0
        assert app.execute("SELECT archivist_tenant()").fetchone()[0] is None


def test_another_tenants_rows_cannot_be_written_changed_or_deleted(tenants):
    acme, globex = tenants["acme"], tenants["globex"]
    with role_connection() as app:
        with scoped(app, organisation_id=acme.organisation.pk):
            changed = app.execute("UPDATE memories_memory SET pinned = true WHERE id = %s", [globex.memory.pk]).rowcount
            deleted = app.execute(
                "DELETE FROM memories_channelmember WHERE organisation_id = %s", [globex.organisation.pk]
            ).rowcount
            assert (changed, deleted) == (0, 0)
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
            scoped(app, organisation_id=acme.organisation.pk),
        ):
            app.execute(
                "INSERT INTO memories_channel (organisation_id, external_id, kind, created_at, updated_at)"
                " VALUES (%s, 'C-planted', 'public', now(), now())",
                [globex.organisation.pk],
            )
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
            scoped(app, organisation_id=acme.organisation.pk),
        ):
            # Moving one's own row into another tenant is refused as well.
            app.execute(
                "UPDATE memories_channel SET organisation_id = %s WHERE organisation_id = %s",
                [globex.organisation.pk, acme.organisation.pk],
            )


def test_another_organisations_claim_is_visible_only_while_admitted(tenants):
    acme, globex = tenants["acme"], tenants["globex"]
    with role_connection() as app:
        with scoped(app, organisation_id=acme.organisation.pk):
            # globex's claim is admitted: network knowledge; its admission history comes with it.
            assert count(app, "memories_memory", "id = %s", [globex.claim.pk]) == 1
            assert count(app, "admissions_admissionrecord", "claim_id = %s", [globex.claim.pk]) == 1
            assert count(app, "memories_memory", "id = %s", [globex.memory.pk]) == 0
        with scoped(app, organisation_id=globex.organisation.pk):
            # acme's claim is challenged, not admitted: it stays acme's.
            assert count(app, "memories_memory", "id = %s", [acme.claim.pk]) == 0
            assert count(app, "admissions_admissionrecord", "claim_id = %s", [acme.claim.pk]) == 0
        # Not without a tenant: the exception is for requests that act for someone.
        assert count(app, "memories_memory", "id = %s", [globex.claim.pk]) == 0


def test_stewards_see_every_claim_and_no_persons_memory(tenants):
    acme, globex = tenants["acme"], tenants["globex"]
    with role_connection() as app, scoped(app, organisation_id=tenants["stewardship"].pk, cross_tenant=STEWARD):
        assert count(app, "memories_memory", "id IN (%s, %s)", [acme.claim.pk, globex.claim.pk]) == 2
        assert count(app, "admissions_admissionrecord") == 2
        assert count(app, "memories_memory", "bucket <> 'system'") == 0
        assert count(app, "memories_memoryaudit", "memory_id IN (%s, %s)", [acme.memory.pk, globex.memory.pk]) == 0
        assert count(app, "memories_memoryaudit", "memory_id = %s", [acme.claim.pk]) >= 1


def test_operators_see_every_row_and_only_by_their_flag(tenants):
    acme, globex = str(tenants["acme"].organisation.pk), str(tenants["globex"].organisation.pk)
    with role_connection() as app, scoped(app, cross_tenant=OPERATOR):
        for table in PROTECTED_TABLES:
            assert {acme, globex} <= organisations_seen(app, table), table


def test_a_token_is_found_by_its_hash_and_no_other_token_is(tenants):
    acme, globex = tenants["acme"], tenants["globex"]
    with role_connection() as app, scoped(app, token_hash=token_hash_of(acme.token)):
        rows = app.execute("SELECT organisation_id FROM accounts_agenttoken").fetchall()
        assert [str(row[0]) for row in rows] == [str(acme.organisation.pk)]
        assert count(app, "accounts_agenttoken", "organisation_id = %s", [globex.organisation.pk]) == 0


def test_the_maintenance_role_sees_every_tenant(tenants):
    acme, globex = str(tenants["acme"].organisation.pk), str(tenants["globex"].organisation.pk)
    with role_connection(role=MAINTENANCE_ROLE) as maintenance:
        for table in PROTECTED_TABLES:
            assert {acme, globex} <= organisations_seen(maintenance, table), table


def test_the_application_role_owns_nothing_and_cannot_bypass(tenants):
    with role_connection(role="") as owner:
        superuser, bypass, login = owner.execute(
            "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s", [APP_ROLE]
        ).fetchone()
        owned = count(owner, "pg_class c JOIN pg_roles r ON r.oid = c.relowner", "r.rolname = %s", [APP_ROLE])
    assert (superuser, bypass, login, owned) == (False, False, False, 0)
    with role_connection() as app, pytest.raises(psycopg.errors.InsufficientPrivilege):
        app.execute("ALTER TABLE memories_memory DISABLE ROW LEVEL SECURITY")
