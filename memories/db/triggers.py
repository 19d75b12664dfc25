"""SQL the database holds for memories: functions and triggers the ORM cannot express.

Kept here, beside the model; the migrations applied a frozen copy, so a change
here needs a migration of its own.
"""

from lib.sql import row_trigger
from memories.models import EVIDENCE_KINDS

_KINDS = ", ".join(f"'{kind}'" for kind in EVIDENCE_KINDS)

EVIDENCE_REFS_VALID = f"""
CREATE OR REPLACE FUNCTION memories_evidence_refs_valid(refs jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(refs) <> 'array' THEN false
  ELSE NOT EXISTS (
    SELECT 1 FROM jsonb_array_elements(refs) AS item
    WHERE CASE
      WHEN jsonb_typeof(item) <> 'object' THEN true
      WHEN (SELECT count(*) FROM jsonb_object_keys(item)) <> 2 THEN true
      WHEN NOT (item ? 'kind' AND item ? 'ref') THEN true
      WHEN jsonb_typeof(item -> 'ref') <> 'string' THEN true
      WHEN item ->> 'kind' NOT IN ({_KINDS}) THEN true
      WHEN btrim(item ->> 'ref') = '' OR char_length(item ->> 'ref') > 500 THEN true
      ELSE false
    END
  ) END
$$;
"""

# A memory's content and provenance are fixed for the life of the row. The
# one exception is erasure: redaction empties the body (the CHECK
# memories_redaction_empties makes it clear the vector in the same statement),
# and an erased row's source ref, label and run id may be emptied, then or
# later, because they can quote or name the person erased (docs/privacy.md).
IMMUTABLE_TRIGGER, DROP_IMMUTABLE_TRIGGER = row_trigger(
    "memories_immutable BEFORE UPDATE ON memories_memory",
    function="memories_guard_update",
    body="""DECLARE
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
""",
)

DROP_EVIDENCE_REFS_VALID = "DROP FUNCTION IF EXISTS memories_evidence_refs_valid(jsonb);"
