"""Row-level security on the threads app's tables: events hold what people said, in their words."""

from django.db import migrations


TABLES = (
    "threads_thread",
    "threads_threadevent",
    "threads_learning",
    "threads_learningsource",
)

# Frozen: the SQL this migration ran when it was written. The live modules may change;
# a migration must keep doing what it did, so it carries its own copy.
PROTECT = """
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
"""


class Migration(migrations.Migration):
    dependencies = [
        ("tenancy", "0001_row_level_security"),
        ("threads", "0001_initial"),
    ]

    operations = [migrations.RunSQL(PROTECT, UNPROTECT)]
