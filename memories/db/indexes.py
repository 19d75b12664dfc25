"""SQL the agent-turn API relies on that the ORM cannot express: recall's indexes and the injection scrub.

Kept here so the reasons sit beside the statements; the migrations applied a
frozen copy, so a change here needs a migration of its own.
"""

from lib.sql import row_trigger
from memories.db.predicates import live_sql, recallable_sql

# The live, non-system rows recall may return. Every recall index is partial on
# exactly this, so the planner can prove a recall query implies it.
LIVE_PREDICATE = live_sql()

# Exact vector search for every organisation below the HNSW threshold: the
# tenant (and scope) prefix finds its rows, and the vectors and filter columns
# come from the index itself, so a scan touches index pages in tenant order
# instead of one scattered heap page per row (about 3x faster at 1M rows, bench/recall.py). It holds every
# column the recall predicate and the row-level policy read (`stance` for promotion tombstones, `bucket` for the
# policy's system branch): one missing sends the scan to the heap for every row.
COVERING_INDEX = f"""
CREATE INDEX IF NOT EXISTS memories_recall_cover_idx ON memories_memory
  (organisation_id, scope, scope_ref)
  INCLUDE (id, agent_id, expires_at, embedding_model, pinned, stance, bucket, embedding)
  WHERE {LIVE_PREDICATE} AND embedding IS NOT NULL;
"""
DROP_COVERING_INDEX = "DROP INDEX IF EXISTS memories_recall_cover_idx;"

# "N facts here are not embedded yet": counted from this index without touching embedded rows.
UNEMBEDDED_INDEX = f"""
CREATE INDEX IF NOT EXISTS memories_recall_unembedded_idx ON memories_memory (organisation_id, scope, scope_ref)
  WHERE {LIVE_PREDICATE} AND embedding IS NULL;
"""
DROP_UNEMBEDDED_INDEX = "DROP INDEX IF EXISTS memories_recall_unembedded_idx;"

# Recent mode and render: newest first within a tenant without sorting all of a large tenant's rows.
RECENT_INDEX = f"""
CREATE INDEX IF NOT EXISTS memories_recall_recent_idx ON memories_memory (organisation_id, created_at DESC)
  WHERE {LIVE_PREDICATE};
"""
DROP_RECENT_INDEX = "DROP INDEX IF EXISTS memories_recall_recent_idx;"

# Erasing a memory empties every injected line that showed it, in the same
# statement, whichever path erased it (the API, a subject erasure, the purge,
# an operator in psql). The record keeps the line's place, scope and author,
# so a replay can say which fact it can no longer show, and when it went.
SCRUB_INJECTIONS_TRIGGER, DROP_SCRUB_INJECTIONS_TRIGGER = row_trigger(
    "memories_scrub_injections AFTER UPDATE OF redacted_at ON memories_memory",
    function="memories_scrub_injections",
    when="OLD.redacted_at IS NULL AND NEW.redacted_at IS NOT NULL",
    body="""BEGIN
  UPDATE memories_injectionline
     SET line = '', erased_at = NEW.redacted_at
   WHERE memory_id = NEW.id AND organisation_id = NEW.organisation_id AND erased_at IS NULL;
  RETURN NULL;
END
""",
)

# An injected line is a record of what a prompt held: it never changes, except
# being emptied when its memory is erased.
INJECTION_LINE_IMMUTABLE_TRIGGER, DROP_INJECTION_LINE_IMMUTABLE_TRIGGER = row_trigger(
    "memories_injection_line_immutable BEFORE UPDATE ON memories_injectionline",
    function="memories_guard_injection_line",
    body="""BEGIN
  IF (NEW.injection_id, NEW.organisation_id, NEW.position, NEW.memory_id, NEW.block, NEW.section,
      NEW.scope, NEW.author, NEW.tier)
     IS DISTINCT FROM
     (OLD.injection_id, OLD.organisation_id, OLD.position, OLD.memory_id, OLD.block, OLD.section,
      OLD.scope, OLD.author, OLD.tier) THEN
    RAISE EXCEPTION 'memories_injection_immutable: an injection record never changes'
      USING ERRCODE = '23514';
  END IF;
  IF NEW.line IS DISTINCT FROM OLD.line AND NOT (NEW.line = '' AND NEW.erased_at IS NOT NULL) THEN
    RAISE EXCEPTION 'memories_injection_immutable: a line is only ever emptied, by an erasure'
      USING ERRCODE = '23514';
  END IF;
  IF OLD.erased_at IS NOT NULL AND NEW.erased_at IS DISTINCT FROM OLD.erased_at THEN
    RAISE EXCEPTION 'memories_injection_immutable: an erasure cannot be undone'
      USING ERRCODE = '23514';
  END IF;
  RETURN NEW;
END
""",
)

# Pinned facts come first in every recall and render: found from this small
# index instead of filtering every live row of a large tenant for `pinned`.
PINNED_INDEX = f"""
CREATE INDEX IF NOT EXISTS memories_recall_pinned_idx ON memories_memory (organisation_id, created_at DESC)
  WHERE pinned AND {LIVE_PREDICATE};
"""
DROP_PINNED_INDEX = "DROP INDEX IF EXISTS memories_recall_pinned_idx;"

# "N facts here are embedded by another model": a B-tree the count ranges over on both sides of the current
# model (`<` and `>`; `<>` is no index condition), so finding none reads no row.
MODEL_INDEX = f"""
CREATE INDEX IF NOT EXISTS memories_recall_model_idx ON memories_memory (organisation_id, embedding_model)
  WHERE {LIVE_PREDICATE} AND embedding IS NOT NULL;
"""
DROP_MODEL_INDEX = "DROP INDEX IF EXISTS memories_recall_model_idx;"

# The word list of a recall, served by the GIN index. Under row-level security `@@` (not leakproof) can
# never be an index condition, so a large tenant's word list read every row of the place. This function
# runs as the table's owner (whose policy is `true`) and applies the tenant itself, taken from the same
# transaction setting the policies read (`archivist_tenant()`), never from an argument: with no tenant set
# it returns nothing. The rest of the recall predicate (liveness, tombstones, expiry, the place's scopes,
# the agent, the time filters) is applied here as in `memories.recall.candidates.base_predicate`; NULL
# `person`, `agent` and bounds mean none. The tenant goes in as a literal so the planner sees it (as
# recall's own statements do). `search_path` is pinned: a definer function must not resolve names
# through a caller's schemas.
_RECALLABLE_QUOTED = recallable_sql("m").replace("'", "''")  # inside the quoted statement text
WORD_LIST_FUNCTION = f"""
CREATE OR REPLACE FUNCTION memories_word_list(
  question tsquery, now timestamptz, channel text, person text, agent uuid,
  occurred_after timestamptz, occurred_before timestamptz, pool integer
) RETURNS TABLE (id uuid, score real, created_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER AS $$
DECLARE
  tenant uuid := archivist_tenant();
BEGIN
  IF tenant IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY EXECUTE format(
    'SELECT m.id, ts_rank(m.search_vector, $1), m.created_at FROM memories_memory m'
    ' WHERE m.organisation_id = %L AND m.search_vector @@ $1'
    ' AND {_RECALLABLE_QUOTED} AND m.expires_at > $2'
    ' AND (m.scope = ''workspace'' OR (m.scope = ''channel'' AND m.scope_ref = $3)'
    ' OR (m.scope = ''person'' AND m.scope_ref = $4))'
    ' AND ($5 IS NULL OR m.agent_id IS NULL OR m.agent_id = $5)'
    ' AND ($6 IS NULL OR coalesce(m.occurred_at, m.created_at) >= $6)'
    ' AND ($7 IS NULL OR coalesce(m.occurred_at, m.created_at) < $7)'
    ' ORDER BY 2 DESC, m.created_at DESC, m.id LIMIT $8', tenant)
  USING question, now, channel, person, agent, occurred_after, occurred_before, pool;
END
$$;
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION memories_word_list(tsquery, timestamptz, text, text, uuid, timestamptz,'
    ' timestamptz, integer) SET search_path = pg_catalog, %I, pg_temp', current_schema());
END
$$;
REVOKE ALL ON FUNCTION memories_word_list(tsquery, timestamptz, text, text, uuid, timestamptz, timestamptz, integer)
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memories_word_list(tsquery, timestamptz, text, text, uuid, timestamptz, timestamptz,
  integer) TO archivist_app, archivist_maintenance;
"""
DROP_WORD_LIST_FUNCTION = (
    "DROP FUNCTION IF EXISTS memories_word_list(tsquery, timestamptz, text, text, uuid, timestamptz, timestamptz,"
    " integer);"
)
