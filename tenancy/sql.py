"""Row-level security: the roles, the per-transaction settings and the policies, as SQL."""

# Defence in depth under the query predicate every selector already writes
# (`organisation=...`): if a view forgets its filter, PostgreSQL still returns
# only the current tenant's rows to the application role.
#
# - `archivist_app` is the role web requests run as. It owns no table and has
#   no BYPASSRLS, so every protected table shows it only the rows of the
#   organisation named by `archivist.organisation_id`, a setting made with
#   `set_config(..., true)` (SET LOCAL) inside the request's transaction.
#   With no tenant set it sees no row at all.
# - `archivist_maintenance` holds one permissive policy per protected table:
#   the cross-tenant jobs (embedding sweep, purge, index builds, migrations)
#   run as the owner, which is a member of it.
# - Documented exceptions, each a policy of its own, all for `archivist_app`:
#   * network claims: a system claim that a steward's admission stands for
#     (and its admission records) is readable by any tenant's request;
#   * stewards (`archivist.cross_tenant = 'steward'`): every system claim, its
#     records and its audit rows, across organisations;
#   * operators (`archivist.cross_tenant = 'operator'`, superusers in the admin):
#     every row; the admin is the operators' console;
#   * agent tokens: the one row whose hash the request presented
#     (`archivist.token_hash`), because the tenant is known only once the token is.
#
# To cover a table added later, run what `protect(table)` and `unprotect(table)`
# return from a migration of the app that owns it (depending on this app's latest
# migration), pasted in as text: a migration never imports a live module
# (tests/test_migrations_are_frozen.py), so it keeps doing what it did when the
# module changes. memories/migrations/0004_place_audit.py is an example.
#
# `tenancy/tests/test_every_tenant_table_is_protected.py` fails for any table
# with an `organisation_id` column that is neither protected nor exempted in
# `EXEMPT_TABLES` with its reason.

from __future__ import annotations

APP_ROLE = "archivist_app"
MAINTENANCE_ROLE = "archivist_maintenance"
TENANT_SETTING = "archivist.organisation_id"
CROSS_TENANT_SETTING = "archivist.cross_tenant"
TOKEN_HASH_SETTING = "archivist.token_hash"
STEWARD = "steward"
OPERATOR = "operator"

# Tables holding tenant data, each carrying `organisation_id`.
PROTECTED_TABLES = (
    "memories_memory",
    "memories_channel",
    "memories_channelmember",
    "memories_memoryaudit",
    "memories_injection",
    "memories_injectionline",
    "memories_idempotencykey",
    "memories_tenantvectorindex",
    "admissions_admissionrecord",
    "accounts_agenttoken",
    # tenancy/migrations/0002_threads.py
    "threads_thread",
    "threads_threadevent",
    "threads_learning",
    "threads_learningsource",
    # memories/migrations/0004_place_audit.py
    "memories_placeaudit",
    # accounts/migrations/0005_account_audit.py
    "accounts_accountaudit",
    # threads/migrations/0005_episode_parts.py
    "threads_episodepart",
)

# Tables with an organisation column that stay outside row-level security, and why.
EXEMPT_TABLES = {
    "accounts_membership": (
        "resolves a signed-in person's organisation, so it is read before any tenant is known; "
        "it holds who belongs where and in which role, no memory content"
    ),
    "accounts_agent": (
        "an agent's name, read with its token before the tenant is known and shown to stewards "
        "beside claims of every organisation; no memory content"
    ),
}

ROLES = f"""
DO $$
BEGIN
  -- Roles belong to the cluster, not the database: create them once, and leave
  -- them to the other databases of the cluster (a test run has one per process).
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
    CREATE ROLE {APP_ROLE} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{MAINTENANCE_ROLE}') THEN
    CREATE ROLE {MAINTENANCE_ROLE} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION;
  END IF;
  -- The owner runs migrations and the workers' cross-tenant jobs, through the
  -- maintenance policies (a superuser passes them anyway). It is deliberately
  -- not a member of {APP_ROLE}: the network-claims policy consults a view the
  -- owner reads, and the owner must not be subject to that policy itself.
  IF NOT pg_has_role(current_user, '{MAINTENANCE_ROLE}', 'USAGE') THEN
    EXECUTE format('GRANT {MAINTENANCE_ROLE} TO %I', current_user);
  END IF;
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO {APP_ROLE}, {MAINTENANCE_ROLE}', current_schema());
  EXECUTE format(
    'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO {APP_ROLE}, {MAINTENANCE_ROLE}',
    current_schema());
  EXECUTE format(
    'GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA %I TO {APP_ROLE}, {MAINTENANCE_ROLE}',
    current_schema());
  -- Tables later migrations create (as this same owner) get the same grants;
  -- row-level security on them is `protect()`'s job.
  EXECUTE format(
    'ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {APP_ROLE}, '
    '{MAINTENANCE_ROLE}', current_schema());
  EXECUTE format(
    'ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {APP_ROLE}, '
    '{MAINTENANCE_ROLE}', current_schema());
END
$$;
-- Requests read which migrations ran (/healthz) and never write that table.
REVOKE INSERT, UPDATE, DELETE ON django_migrations FROM {APP_ROLE};
"""

UNDO_ROLES = f"""
DO $$
BEGIN
  EXECUTE format(
    'ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE ALL ON TABLES FROM {APP_ROLE}, {MAINTENANCE_ROLE}',
    current_schema());
  EXECUTE format(
    'ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE ALL ON SEQUENCES FROM {APP_ROLE}, {MAINTENANCE_ROLE}',
    current_schema());
  EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM {APP_ROLE}, {MAINTENANCE_ROLE}', current_schema());
  EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %I FROM {APP_ROLE}, {MAINTENANCE_ROLE}', current_schema());
  EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM {APP_ROLE}, {MAINTENANCE_ROLE}', current_schema());
END
$$;
"""

FUNCTIONS = f"""
-- The request's tenant, or NULL when none was set in this transaction. A
-- setting made with set_config(..., true) reverts at COMMIT or ROLLBACK, so a
-- pooled connection never carries one request's tenant into the next.
CREATE OR REPLACE FUNCTION archivist_tenant() RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT NULLIF(current_setting('{TENANT_SETTING}', true), '')::uuid
$$;

CREATE OR REPLACE FUNCTION archivist_cross_tenant() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT COALESCE(current_setting('{CROSS_TENANT_SETTING}', true), '')
$$;

-- Whether a steward's admission stands for this claim. The view runs with its
-- owner's rights, so it sees every organisation's records; plpgsql keeps the
-- lookup out of the calling query's plan (no policy recursion through the view).
CREATE OR REPLACE FUNCTION archivist_claim_admitted(claim uuid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM admissions_claim_status s WHERE s.claim_id = claim AND s.status = 'admitted');
END
$$;
"""

UNDO_FUNCTIONS = """
DROP FUNCTION IF EXISTS archivist_claim_admitted(uuid);
DROP FUNCTION IF EXISTS archivist_cross_tenant();
DROP FUNCTION IF EXISTS archivist_tenant();
"""


def protect(table: str, column: str = "organisation_id") -> str:
    """SQL that puts `table` under row-level security with the three standard policies.

    Idempotent: running it twice leaves the same policies.
    """
    tenant = f"{column} = archivist_tenant()"
    operator = f"archivist_cross_tenant() = '{OPERATOR}'"
    return f"""
ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON {table};
CREATE POLICY archivist_tenant ON {table} TO {APP_ROLE} USING ({tenant}) WITH CHECK ({tenant});
DROP POLICY IF EXISTS archivist_operator ON {table};
CREATE POLICY archivist_operator ON {table} TO {APP_ROLE} USING ({operator}) WITH CHECK ({operator});
DROP POLICY IF EXISTS archivist_maintenance ON {table};
CREATE POLICY archivist_maintenance ON {table} TO {MAINTENANCE_ROLE} USING (true) WITH CHECK (true);
"""


def unprotect(table: str) -> str:
    return f"""
DROP POLICY IF EXISTS archivist_tenant ON {table};
DROP POLICY IF EXISTS archivist_operator ON {table};
DROP POLICY IF EXISTS archivist_maintenance ON {table};
ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;
ALTER TABLE {table} DISABLE ROW LEVEL SECURITY;
"""


_STEWARD = f"archivist_cross_tenant() = '{STEWARD}'"

# The documented exceptions, beyond the three standard policies.
EXCEPTIONS = f"""
-- Network claims: an admitted system claim is outside knowledge every tenant may be shown.
CREATE POLICY archivist_network_claims ON memories_memory FOR SELECT TO {APP_ROLE}
  USING (bucket = 'system' AND archivist_tenant() IS NOT NULL AND archivist_claim_admitted(id));
CREATE POLICY archivist_network_claims ON admissions_admissionrecord FOR SELECT TO {APP_ROLE}
  USING (archivist_tenant() IS NOT NULL AND archivist_claim_admitted(claim_id));

-- Stewards decide claims from every organisation: the system bucket, its records and their audit rows.
CREATE POLICY archivist_steward ON memories_memory TO {APP_ROLE}
  USING (bucket = 'system' AND {_STEWARD}) WITH CHECK (bucket = 'system' AND {_STEWARD});
CREATE POLICY archivist_steward ON admissions_admissionrecord TO {APP_ROLE}
  USING ({_STEWARD}) WITH CHECK ({_STEWARD});
CREATE POLICY archivist_steward ON memories_memoryaudit TO {APP_ROLE}
  USING ({_STEWARD} AND EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id AND m.bucket = 'system'))
  WITH CHECK ({_STEWARD} AND EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id AND m.bucket = 'system'));

-- A token is looked up by the hash of what the caller presented, before its tenant is known.
CREATE POLICY archivist_token_lookup ON accounts_agenttoken FOR SELECT TO {APP_ROLE}
  USING (token_hash = current_setting('{TOKEN_HASH_SETTING}', true));
"""

UNDO_EXCEPTIONS = """
DROP POLICY IF EXISTS archivist_network_claims ON memories_memory;
DROP POLICY IF EXISTS archivist_network_claims ON admissions_admissionrecord;
DROP POLICY IF EXISTS archivist_steward ON memories_memory;
DROP POLICY IF EXISTS archivist_steward ON admissions_admissionrecord;
DROP POLICY IF EXISTS archivist_steward ON memories_memoryaudit;
DROP POLICY IF EXISTS archivist_token_lookup ON accounts_agenttoken;
"""
