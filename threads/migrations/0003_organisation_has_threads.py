"""Issue 15: an organisation's first thread marks it, so recall plans its thread-neighbour walk only where
a thread exists (threads/sql.py holds the live text)."""

from django.db import migrations

# Frozen: the SQL this migration ran when it was written.
MARK_ORGANISATION_TRIGGER = """
CREATE OR REPLACE FUNCTION threads_mark_organisation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE accounts_organisation SET has_threads = true WHERE id = NEW.organisation_id AND NOT has_threads;
  RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS threads_mark_organisation ON threads_thread;
CREATE TRIGGER threads_mark_organisation AFTER INSERT ON threads_thread
  FOR EACH ROW EXECUTE FUNCTION threads_mark_organisation();
"""
DROP_MARK_ORGANISATION_TRIGGER = """
DROP TRIGGER IF EXISTS threads_mark_organisation ON threads_thread;
DROP FUNCTION IF EXISTS threads_mark_organisation();
"""
MARK_EXISTING = """
UPDATE accounts_organisation o SET has_threads = true
  WHERE NOT o.has_threads AND EXISTS (SELECT 1 FROM threads_thread t WHERE t.organisation_id = o.id);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_organisation_has_threads"),
        ("threads", "0002_episodes"),
    ]

    operations = [
        migrations.RunSQL(MARK_ORGANISATION_TRIGGER, DROP_MARK_ORGANISATION_TRIGGER),
        migrations.RunSQL(MARK_EXISTING, migrations.RunSQL.noop),
    ]
