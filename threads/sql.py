"""SQL the database holds for threads: what the ORM cannot express.

Kept here, beside the models; the migration applied a frozen copy, so a change
here needs a migration of its own.
"""

from lib.sql import row_trigger

# An organisation's first thread marks it (`Organisation.has_threads`), in the thread's own transaction,
# whoever inserts it: until then no fact there has a thread event, so recall leaves its thread-neighbour
# walk out. The flag is only ever raised: once set, a later thread's insert writes nothing.
MARK_ORGANISATION_TRIGGER, DROP_MARK_ORGANISATION_TRIGGER = row_trigger(
    "threads_mark_organisation AFTER INSERT ON threads_thread",
    function="threads_mark_organisation",
    body="""BEGIN
  UPDATE accounts_organisation SET has_threads = true WHERE id = NEW.organisation_id AND NOT has_threads;
  RETURN NULL;
END
""",
)

# The organisations that had threads before the trigger existed.
MARK_EXISTING = """
UPDATE accounts_organisation o SET has_threads = true
  WHERE NOT o.has_threads AND EXISTS (SELECT 1 FROM threads_thread t WHERE t.organisation_id = o.id);
"""
