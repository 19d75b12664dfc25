"""Erasure reaches an erased row's provenance: its source ref, label and run id may be emptied, since they
can quote or name the person erased (memories/db/triggers.py holds the live text; docs/privacy.md lists what
an erasure empties). Rows erased before this migration lose theirs now."""

from django.db import migrations

# Frozen: the SQL this migration ran when it was written.
IMMUTABLE_TRIGGER = """
CREATE OR REPLACE FUNCTION memories_guard_update() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  redacting boolean := OLD.redacted_at IS NULL AND NEW.redacted_at IS NOT NULL;
  erased boolean := NEW.redacted_at IS NOT NULL;
BEGIN
  IF OLD.redacted_at IS NOT NULL AND NEW.redacted_at IS DISTINCT FROM OLD.redacted_at THEN
    RAISE EXCEPTION 'memories_immutable: an erasure cannot be undone or rewritten'
      USING ERRCODE = '23514';
  END IF;
  IF NEW.body IS DISTINCT FROM OLD.body AND NOT (redacting AND NEW.body = '') THEN
    RAISE EXCEPTION 'memories_immutable: body cannot change; write a correction that supersedes it'
      USING ERRCODE = '23514';
  END IF;
  IF (NEW.source_ref IS DISTINCT FROM OLD.source_ref AND NOT (erased AND NEW.source_ref = ''))
     OR (NEW.source_label IS DISTINCT FROM OLD.source_label AND NOT (erased AND NEW.source_label = ''))
     OR (NEW.source_run_id IS DISTINCT FROM OLD.source_run_id AND NOT (erased AND NEW.source_run_id = '')) THEN
    RAISE EXCEPTION 'memories_immutable: a source ref, label or run id changes only by being emptied on an erased row'
      USING ERRCODE = '23514';
  END IF;
  IF (NEW.bucket, NEW.organisation_id, NEW.owner_id, NEW.agent_id, NEW.author, NEW.written_by_id,
      NEW.source_kind,
      NEW.subject_type, NEW.subject_id,
      NEW.slug, NEW.entity, NEW.transparency, NEW.as_of, NEW.evidence_refs, NEW.stance)
     IS DISTINCT FROM
     (OLD.bucket, OLD.organisation_id, OLD.owner_id, OLD.agent_id, OLD.author, OLD.written_by_id,
      OLD.source_kind,
      OLD.subject_type, OLD.subject_id,
      OLD.slug, OLD.entity, OLD.transparency, OLD.as_of, OLD.evidence_refs, OLD.stance) THEN
    RAISE EXCEPTION 'memories_immutable: bucket, tenant, owner, author, source and subject never change'
      USING ERRCODE = '23514';
  END IF;
  IF NEW.superseded_by_id IS DISTINCT FROM OLD.superseded_by_id THEN
    IF OLD.superseded_by_id IS NOT NULL THEN
      RAISE EXCEPTION 'memories_supersede_once: superseded_by is set once and never changed'
        USING ERRCODE = '23514';
    END IF;
    IF OLD.redacted_at IS NOT NULL THEN
      RAISE EXCEPTION 'memories_supersede_once: only a live row can be superseded'
        USING ERRCODE = '23514';
    END IF;
  END IF;
  RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS memories_immutable ON memories_memory;
CREATE TRIGGER memories_immutable BEFORE UPDATE ON memories_memory
  FOR EACH ROW EXECUTE FUNCTION memories_guard_update();
"""
# Frozen: the function as memories/0001_initial.py made it, restored when this migration is reversed.
IMMUTABLE_TRIGGER_BEFORE = """
DROP TRIGGER IF EXISTS memories_immutable ON memories_memory;
DROP FUNCTION IF EXISTS memories_guard_update();
"""
EMPTY_ERASED_PROVENANCE = """
UPDATE memories_memory SET source_ref = '', source_label = '', source_run_id = ''
  WHERE redacted_at IS NOT NULL AND (source_ref <> '' OR source_label <> '' OR source_run_id <> '');
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0012_quarantine_and_write_rules"),
    ]

    operations = [
        migrations.RunSQL(IMMUTABLE_TRIGGER, IMMUTABLE_TRIGGER_BEFORE),
        migrations.RunSQL(EMPTY_ERASED_PROVENANCE, migrations.RunSQL.noop),
    ]
