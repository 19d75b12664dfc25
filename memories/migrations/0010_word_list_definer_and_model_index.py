"""Issue 15: the large tenants' word list served by the GIN index (a definer function applying the tenant
itself), and the other-model count served by a B-tree over the embedding model."""

from django.db import migrations

# Frozen: the SQL this migration ran when it was written (memories/db/indexes.py holds the live text).
MODEL_INDEX = """
CREATE INDEX IF NOT EXISTS memories_recall_model_idx ON memories_memory (organisation_id, embedding_model)
  WHERE redacted_at IS NULL AND superseded_by_id IS NULL AND bucket <> 'system' AND embedding IS NOT NULL;
"""
DROP_MODEL_INDEX = """DROP INDEX IF EXISTS memories_recall_model_idx;"""
WORD_LIST_FUNCTION = r"""
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
    ' AND m.redacted_at IS NULL AND m.superseded_by_id IS NULL AND m.bucket <> ''system'' AND m.stance IS NULL AND m.expires_at > $2'
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
DROP_WORD_LIST_FUNCTION = """DROP FUNCTION IF EXISTS memories_word_list(tsquery, timestamptz, text, text, uuid, timestamptz, timestamptz, integer);"""


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0009_source_kinds_episode_and_import"),
        # archivist_tenant() and the roles the function is granted to.
        ("tenancy", "0002_threads"),
    ]

    operations = [
        migrations.RunSQL(MODEL_INDEX, DROP_MODEL_INDEX),
        migrations.RunSQL(WORD_LIST_FUNCTION, DROP_WORD_LIST_FUNCTION),
    ]
