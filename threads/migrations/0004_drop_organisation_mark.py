"""Recall no longer reads `Organisation.has_threads`: drop the trigger that set it, before accounts drops the column."""

from django.db import migrations

# Frozen: the SQL this migration runs, and to undo it the SQL 0003 ran (the flag comes back set where threads are).
DROP_MARK_ORGANISATION_TRIGGER = """
DROP TRIGGER IF EXISTS threads_mark_organisation ON threads_thread;
DROP FUNCTION IF EXISTS threads_mark_organisation();
"""
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
UPDATE accounts_organisation o SET has_threads = true
  WHERE NOT o.has_threads AND EXISTS (SELECT 1 FROM threads_thread t WHERE t.organisation_id = o.id);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("threads", "0003_organisation_has_threads"),
    ]
    # The trigger writes the column: it goes first. Said here, so accounts' migrations name no threads one.
    run_before = [
        ("accounts", "0006_remove_organisation_has_threads"),
    ]

    operations = [
        migrations.RunSQL(DROP_MARK_ORGANISATION_TRIGGER, MARK_ORGANISATION_TRIGGER),
    ]
