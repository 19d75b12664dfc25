from django.db import migrations


# Frozen: the SQL this migration ran when it was written. The live modules may change;
# a migration must keep doing what it did, so it carries its own copy.
DROP_PINNED_INDEX = """DROP INDEX IF EXISTS memories_recall_pinned_idx;"""
PINNED_INDEX = """
CREATE INDEX IF NOT EXISTS memories_recall_pinned_idx ON memories_memory (organisation_id, created_at DESC)
  WHERE pinned AND redacted_at IS NULL AND superseded_by_id IS NULL AND bucket <> 'system';
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0002_turn_api")]

    operations = [migrations.RunSQL(PINNED_INDEX, DROP_PINNED_INDEX)]
