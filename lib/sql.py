"""Row triggers written once: the plpgsql function, the trigger that runs it, and the SQL that drops both.

The apps' SQL modules (memories/db/triggers.py, memories/db/indexes.py,
admissions/sql.py) spell only what is theirs: the trigger's name, table,
timing and body. Migrations keep their SQL as frozen text and never call this.
"""

from __future__ import annotations


def row_trigger(
    name: str, *, table: str, fires: str, function: str, body: str, when: str | None = None
) -> tuple[str, str]:
    """The SQL that (re)creates the trigger `name` on `table`, and the SQL that drops it, as RunSQL takes them.

    `fires` is its timing and events ("BEFORE UPDATE OR DELETE"); `body` is the
    plpgsql between `$$` and `$$`, from DECLARE or BEGIN to END; `when`, a
    condition on OLD and NEW that a row must meet for the function to run.
    """
    runs = f"FOR EACH ROW WHEN ({when})\n  EXECUTE FUNCTION" if when else "FOR EACH ROW EXECUTE FUNCTION"
    create = (
        f"\nCREATE OR REPLACE FUNCTION {function}() RETURNS trigger\nLANGUAGE plpgsql AS $$\n{body}$$;\n"
        f"DROP TRIGGER IF EXISTS {name} ON {table};\n"
        f"CREATE TRIGGER {name} {fires} ON {table}\n  {runs} {function}();\n"
    )
    drop = f"\nDROP TRIGGER IF EXISTS {name} ON {table};\nDROP FUNCTION IF EXISTS {function}();\n"
    return create, drop
