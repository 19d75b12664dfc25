"""The consolidation backlog across every organisation, for /metrics, readable by the web's role.

The web runs as `archivist_app`, which sees no thread without a tenant; an operator's gauge needs the count
and age of everything still waiting, and nothing else. So one SECURITY DEFINER function, owned by the
migrating owner (whose maintenance policy reads every row), returns two numbers and no row of anyone's.
"""

from django.db import migrations


# Frozen: the SQL this migration ran when it was written.
CREATE = """
CREATE OR REPLACE FUNCTION archivist_consolidation_backlog(OUT threads_behind bigint, OUT oldest_seconds double precision)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
  SELECT count(DISTINCT t.id),
         coalesce(extract(epoch FROM clock_timestamp() - min(e.created_at)), 0)::double precision
  FROM threads_thread t
  JOIN threads_threadevent e ON e.thread_id = t.id AND e.sequence > t.consolidated_through
  WHERE t.consolidated_through < t.last_sequence
$$;
REVOKE ALL ON FUNCTION archivist_consolidation_backlog() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION archivist_consolidation_backlog() TO archivist_app;
"""

DROP = "DROP FUNCTION IF EXISTS archivist_consolidation_backlog();"


class Migration(migrations.Migration):
    dependencies = [
        ("tenancy", "0002_threads"),
        ("threads", "0003_organisation_has_threads"),
    ]

    operations = [migrations.RunSQL(CREATE, DROP)]
