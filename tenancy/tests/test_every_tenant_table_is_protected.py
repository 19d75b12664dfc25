"""Every table that carries an organisation is under row-level security, or exempt with a written reason.

A table added later with an `organisation_id` column fails here until its
migration runs what `tenancy.sql.protect(table)` returns or `EXEMPT_TABLES` says why not.
"""

from __future__ import annotations

import pytest
from django.db import connection

from tenancy.sql import APP_ROLE, EXEMPT_TABLES, MAINTENANCE_ROLE, PROTECTED_TABLES

pytestmark = pytest.mark.django_db


def _tenant_tables() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.table_name FROM information_schema.columns c"
            " JOIN information_schema.tables t USING (table_schema, table_name)"
            " WHERE c.table_schema = current_schema() AND c.column_name = 'organisation_id'"
            " AND t.table_type = 'BASE TABLE'"
        )
        return {row[0] for row in cursor.fetchall()}


def _security() -> dict[str, tuple[bool, bool]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class"
            " WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'"
        )
        return {name: (enabled, forced) for name, enabled, forced in cursor.fetchall()}


def _policies() -> dict[str, set[tuple[str, str]]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename, policyname, roles::text FROM pg_policies WHERE schemaname = current_schema()")
        policies: dict[str, set[tuple[str, str]]] = {}
        for table, name, roles in cursor.fetchall():
            policies.setdefault(table, set()).add((name, roles.strip("{}")))
        return policies


def test_every_table_carrying_an_organisation_is_protected_or_exempt_with_a_reason():
    tables = _tenant_tables()
    assert set(PROTECTED_TABLES) <= tables
    unaccounted = tables - set(PROTECTED_TABLES) - set(EXEMPT_TABLES)
    assert not unaccounted, f"run tenancy.sql.protect()'s SQL for {sorted(unaccounted)} or exempt them with a reason"
    assert all(len(reason) > 40 for reason in EXEMPT_TABLES.values())


def test_protected_tables_enable_and_force_row_level_security_with_the_standard_policies():
    security, policies = _security(), _policies()
    for table in PROTECTED_TABLES:
        assert security[table] == (True, True), table
        assert {
            ("archivist_tenant", APP_ROLE),
            ("archivist_operator", APP_ROLE),
            ("archivist_maintenance", MAINTENANCE_ROLE),
        } <= policies[table], table


def test_no_policy_lets_the_application_role_through_unconditionally():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, policyname FROM pg_policies WHERE schemaname = current_schema()"
            " AND %s = ANY(roles) AND (qual = 'true' OR with_check = 'true')",
            [APP_ROLE],
        )
        assert cursor.fetchall() == []
