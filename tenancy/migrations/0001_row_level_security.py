"""Row-level security on every table holding tenant data (tenancy/sql.py says why and how).

Runs after the tables exist; a table added later is covered by calling
`tenancy.sql.protect(table)` from its own app's migration.
"""

from django.db import migrations


# Frozen: the tables this migration protected when it was written. Later tables are
# protected by their own migrations, so `tenancy.sql.PROTECTED_TABLES` may grow without changing this one.
TABLES = (
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
    "threads_thread",
    "threads_threadevent",
    "threads_learning",
    "threads_learningsource",
)

# Frozen: the SQL this migration ran when it was written. The live modules may change;
# a migration must keep doing what it did, so it carries its own copy.
PROTECT = """
ALTER TABLE memories_memory ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories_memory FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON memories_memory;
CREATE POLICY archivist_tenant ON memories_memory TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON memories_memory;
CREATE POLICY archivist_operator ON memories_memory TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON memories_memory;
CREATE POLICY archivist_maintenance ON memories_memory TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE memories_channel ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories_channel FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON memories_channel;
CREATE POLICY archivist_tenant ON memories_channel TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON memories_channel;
CREATE POLICY archivist_operator ON memories_channel TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON memories_channel;
CREATE POLICY archivist_maintenance ON memories_channel TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE memories_channelmember ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories_channelmember FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON memories_channelmember;
CREATE POLICY archivist_tenant ON memories_channelmember TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON memories_channelmember;
CREATE POLICY archivist_operator ON memories_channelmember TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON memories_channelmember;
CREATE POLICY archivist_maintenance ON memories_channelmember TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE memories_memoryaudit ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories_memoryaudit FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON memories_memoryaudit;
CREATE POLICY archivist_tenant ON memories_memoryaudit TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON memories_memoryaudit;
CREATE POLICY archivist_operator ON memories_memoryaudit TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON memories_memoryaudit;
CREATE POLICY archivist_maintenance ON memories_memoryaudit TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE memories_injection ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories_injection FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON memories_injection;
CREATE POLICY archivist_tenant ON memories_injection TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON memories_injection;
CREATE POLICY archivist_operator ON memories_injection TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON memories_injection;
CREATE POLICY archivist_maintenance ON memories_injection TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE memories_injectionline ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories_injectionline FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON memories_injectionline;
CREATE POLICY archivist_tenant ON memories_injectionline TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON memories_injectionline;
CREATE POLICY archivist_operator ON memories_injectionline TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON memories_injectionline;
CREATE POLICY archivist_maintenance ON memories_injectionline TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE memories_idempotencykey ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories_idempotencykey FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON memories_idempotencykey;
CREATE POLICY archivist_tenant ON memories_idempotencykey TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON memories_idempotencykey;
CREATE POLICY archivist_operator ON memories_idempotencykey TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON memories_idempotencykey;
CREATE POLICY archivist_maintenance ON memories_idempotencykey TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE memories_tenantvectorindex ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories_tenantvectorindex FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON memories_tenantvectorindex;
CREATE POLICY archivist_tenant ON memories_tenantvectorindex TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON memories_tenantvectorindex;
CREATE POLICY archivist_operator ON memories_tenantvectorindex TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON memories_tenantvectorindex;
CREATE POLICY archivist_maintenance ON memories_tenantvectorindex TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE admissions_admissionrecord ENABLE ROW LEVEL SECURITY;
ALTER TABLE admissions_admissionrecord FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON admissions_admissionrecord;
CREATE POLICY archivist_tenant ON admissions_admissionrecord TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON admissions_admissionrecord;
CREATE POLICY archivist_operator ON admissions_admissionrecord TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON admissions_admissionrecord;
CREATE POLICY archivist_maintenance ON admissions_admissionrecord TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE accounts_agenttoken ENABLE ROW LEVEL SECURITY;
ALTER TABLE accounts_agenttoken FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON accounts_agenttoken;
CREATE POLICY archivist_tenant ON accounts_agenttoken TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON accounts_agenttoken;
CREATE POLICY archivist_operator ON accounts_agenttoken TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON accounts_agenttoken;
CREATE POLICY archivist_maintenance ON accounts_agenttoken TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE threads_thread ENABLE ROW LEVEL SECURITY;
ALTER TABLE threads_thread FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON threads_thread;
CREATE POLICY archivist_tenant ON threads_thread TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON threads_thread;
CREATE POLICY archivist_operator ON threads_thread TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON threads_thread;
CREATE POLICY archivist_maintenance ON threads_thread TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE threads_threadevent ENABLE ROW LEVEL SECURITY;
ALTER TABLE threads_threadevent FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON threads_threadevent;
CREATE POLICY archivist_tenant ON threads_threadevent TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON threads_threadevent;
CREATE POLICY archivist_operator ON threads_threadevent TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON threads_threadevent;
CREATE POLICY archivist_maintenance ON threads_threadevent TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE threads_learning ENABLE ROW LEVEL SECURITY;
ALTER TABLE threads_learning FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON threads_learning;
CREATE POLICY archivist_tenant ON threads_learning TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON threads_learning;
CREATE POLICY archivist_operator ON threads_learning TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON threads_learning;
CREATE POLICY archivist_maintenance ON threads_learning TO archivist_maintenance USING (true) WITH CHECK (true);

ALTER TABLE threads_learningsource ENABLE ROW LEVEL SECURITY;
ALTER TABLE threads_learningsource FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON threads_learningsource;
CREATE POLICY archivist_tenant ON threads_learningsource TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON threads_learningsource;
CREATE POLICY archivist_operator ON threads_learningsource TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON threads_learningsource;
CREATE POLICY archivist_maintenance ON threads_learningsource TO archivist_maintenance USING (true) WITH CHECK (true);
"""
UNPROTECT = """
DROP POLICY IF EXISTS archivist_tenant ON threads_learningsource;
DROP POLICY IF EXISTS archivist_operator ON threads_learningsource;
DROP POLICY IF EXISTS archivist_maintenance ON threads_learningsource;
ALTER TABLE threads_learningsource NO FORCE ROW LEVEL SECURITY;
ALTER TABLE threads_learningsource DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON threads_learning;
DROP POLICY IF EXISTS archivist_operator ON threads_learning;
DROP POLICY IF EXISTS archivist_maintenance ON threads_learning;
ALTER TABLE threads_learning NO FORCE ROW LEVEL SECURITY;
ALTER TABLE threads_learning DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON threads_threadevent;
DROP POLICY IF EXISTS archivist_operator ON threads_threadevent;
DROP POLICY IF EXISTS archivist_maintenance ON threads_threadevent;
ALTER TABLE threads_threadevent NO FORCE ROW LEVEL SECURITY;
ALTER TABLE threads_threadevent DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON threads_thread;
DROP POLICY IF EXISTS archivist_operator ON threads_thread;
DROP POLICY IF EXISTS archivist_maintenance ON threads_thread;
ALTER TABLE threads_thread NO FORCE ROW LEVEL SECURITY;
ALTER TABLE threads_thread DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON accounts_agenttoken;
DROP POLICY IF EXISTS archivist_operator ON accounts_agenttoken;
DROP POLICY IF EXISTS archivist_maintenance ON accounts_agenttoken;
ALTER TABLE accounts_agenttoken NO FORCE ROW LEVEL SECURITY;
ALTER TABLE accounts_agenttoken DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON admissions_admissionrecord;
DROP POLICY IF EXISTS archivist_operator ON admissions_admissionrecord;
DROP POLICY IF EXISTS archivist_maintenance ON admissions_admissionrecord;
ALTER TABLE admissions_admissionrecord NO FORCE ROW LEVEL SECURITY;
ALTER TABLE admissions_admissionrecord DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON memories_tenantvectorindex;
DROP POLICY IF EXISTS archivist_operator ON memories_tenantvectorindex;
DROP POLICY IF EXISTS archivist_maintenance ON memories_tenantvectorindex;
ALTER TABLE memories_tenantvectorindex NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memories_tenantvectorindex DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON memories_idempotencykey;
DROP POLICY IF EXISTS archivist_operator ON memories_idempotencykey;
DROP POLICY IF EXISTS archivist_maintenance ON memories_idempotencykey;
ALTER TABLE memories_idempotencykey NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memories_idempotencykey DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON memories_injectionline;
DROP POLICY IF EXISTS archivist_operator ON memories_injectionline;
DROP POLICY IF EXISTS archivist_maintenance ON memories_injectionline;
ALTER TABLE memories_injectionline NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memories_injectionline DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON memories_injection;
DROP POLICY IF EXISTS archivist_operator ON memories_injection;
DROP POLICY IF EXISTS archivist_maintenance ON memories_injection;
ALTER TABLE memories_injection NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memories_injection DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON memories_memoryaudit;
DROP POLICY IF EXISTS archivist_operator ON memories_memoryaudit;
DROP POLICY IF EXISTS archivist_maintenance ON memories_memoryaudit;
ALTER TABLE memories_memoryaudit NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memories_memoryaudit DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON memories_channelmember;
DROP POLICY IF EXISTS archivist_operator ON memories_channelmember;
DROP POLICY IF EXISTS archivist_maintenance ON memories_channelmember;
ALTER TABLE memories_channelmember NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memories_channelmember DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON memories_channel;
DROP POLICY IF EXISTS archivist_operator ON memories_channel;
DROP POLICY IF EXISTS archivist_maintenance ON memories_channel;
ALTER TABLE memories_channel NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memories_channel DISABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS archivist_tenant ON memories_memory;
DROP POLICY IF EXISTS archivist_operator ON memories_memory;
DROP POLICY IF EXISTS archivist_maintenance ON memories_memory;
ALTER TABLE memories_memory NO FORCE ROW LEVEL SECURITY;
ALTER TABLE memories_memory DISABLE ROW LEVEL SECURITY;
"""
EXCEPTIONS = """
-- Network claims: an admitted system claim is outside knowledge every tenant may be shown.
CREATE POLICY archivist_network_claims ON memories_memory FOR SELECT TO archivist_app
  USING (bucket = 'system' AND archivist_tenant() IS NOT NULL AND archivist_claim_admitted(id));
CREATE POLICY archivist_network_claims ON admissions_admissionrecord FOR SELECT TO archivist_app
  USING (archivist_tenant() IS NOT NULL AND archivist_claim_admitted(claim_id));

-- Stewards decide claims from every organisation: the system bucket, its records and their audit rows.
CREATE POLICY archivist_steward ON memories_memory TO archivist_app
  USING (bucket = 'system' AND archivist_cross_tenant() = 'steward') WITH CHECK (bucket = 'system' AND archivist_cross_tenant() = 'steward');
CREATE POLICY archivist_steward ON admissions_admissionrecord TO archivist_app
  USING (archivist_cross_tenant() = 'steward') WITH CHECK (archivist_cross_tenant() = 'steward');
CREATE POLICY archivist_steward ON memories_memoryaudit TO archivist_app
  USING (archivist_cross_tenant() = 'steward' AND EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id AND m.bucket = 'system'))
  WITH CHECK (archivist_cross_tenant() = 'steward' AND EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id AND m.bucket = 'system'));

-- A token is looked up by the hash of what the caller presented, before its tenant is known.
CREATE POLICY archivist_token_lookup ON accounts_agenttoken FOR SELECT TO archivist_app
  USING (token_hash = current_setting('archivist.token_hash', true));
"""
FUNCTIONS = """
-- The request's tenant, or NULL when none was set in this transaction. A
-- setting made with set_config(..., true) reverts at COMMIT or ROLLBACK, so a
-- pooled connection never carries one request's tenant into the next.
CREATE OR REPLACE FUNCTION archivist_tenant() RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT NULLIF(current_setting('archivist.organisation_id', true), '')::uuid
$$;

CREATE OR REPLACE FUNCTION archivist_cross_tenant() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT COALESCE(current_setting('archivist.cross_tenant', true), '')
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
ROLES = """
DO $$
BEGIN
  -- Roles belong to the cluster, not the database: create them once, and leave
  -- them to the other databases of the cluster (a test run has one per process).
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'archivist_app') THEN
    CREATE ROLE archivist_app NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'archivist_maintenance') THEN
    CREATE ROLE archivist_maintenance NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION;
  END IF;
  -- The owner runs migrations and the workers' cross-tenant jobs, through the
  -- maintenance policies (a superuser passes them anyway). It is deliberately
  -- not a member of archivist_app: the network-claims policy consults a view the
  -- owner reads, and the owner must not be subject to that policy itself.
  IF NOT pg_has_role(current_user, 'archivist_maintenance', 'USAGE') THEN
    EXECUTE format('GRANT archivist_maintenance TO %I', current_user);
  END IF;
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO archivist_app, archivist_maintenance', current_schema());
  EXECUTE format(
    'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO archivist_app, archivist_maintenance',
    current_schema());
  EXECUTE format(
    'GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA %I TO archivist_app, archivist_maintenance',
    current_schema());
  -- Tables later migrations create (as this same owner) get the same grants;
  -- row-level security on them is `protect()`'s job.
  EXECUTE format(
    'ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO archivist_app, '
    'archivist_maintenance', current_schema());
  EXECUTE format(
    'ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO archivist_app, '
    'archivist_maintenance', current_schema());
END
$$;
-- Requests read which migrations ran (/healthz) and never write that table.
REVOKE INSERT, UPDATE, DELETE ON django_migrations FROM archivist_app;
"""
UNDO_EXCEPTIONS = """
DROP POLICY IF EXISTS archivist_network_claims ON memories_memory;
DROP POLICY IF EXISTS archivist_network_claims ON admissions_admissionrecord;
DROP POLICY IF EXISTS archivist_steward ON memories_memory;
DROP POLICY IF EXISTS archivist_steward ON admissions_admissionrecord;
DROP POLICY IF EXISTS archivist_steward ON memories_memoryaudit;
DROP POLICY IF EXISTS archivist_token_lookup ON accounts_agenttoken;
"""
UNDO_FUNCTIONS = """
DROP FUNCTION IF EXISTS archivist_claim_admitted(uuid);
DROP FUNCTION IF EXISTS archivist_cross_tenant();
DROP FUNCTION IF EXISTS archivist_tenant();
"""
UNDO_ROLES = """
DO $$
BEGIN
  EXECUTE format(
    'ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE ALL ON TABLES FROM archivist_app, archivist_maintenance',
    current_schema());
  EXECUTE format(
    'ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE ALL ON SEQUENCES FROM archivist_app, archivist_maintenance',
    current_schema());
  EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM archivist_app, archivist_maintenance', current_schema());
  EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %I FROM archivist_app, archivist_maintenance', current_schema());
  EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM archivist_app, archivist_maintenance', current_schema());
END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("memories", "0002_turn_api"),
        ("admissions", "0002_stewards_group"),
    ]

    operations = [
        migrations.RunSQL(ROLES, UNDO_ROLES),
        migrations.RunSQL(FUNCTIONS, UNDO_FUNCTIONS),
        migrations.RunSQL(PROTECT, UNPROTECT),
        migrations.RunSQL(EXCEPTIONS, UNDO_EXCEPTIONS),
    ]
