"""Row triggers written once: the plpgsql function, the trigger that runs it, and the SQL that drops both.

The apps' SQL modules (memories/db/triggers.py, memories/db/indexes.py,
admissions/sql.py) spell only what is theirs: the trigger's name, table,
timing and body. Migrations keep their SQL as frozen text and never call this.
"""

from __future__ import annotations


def row_trigger(declaration: str, *, function: str, body: str, when: str | None = None) -> tuple[str, str]:
    """The SQL that (re)creates a row trigger and runs `function`, and the SQL that drops both, as RunSQL takes them.

    `declaration` is what CREATE TRIGGER says of it: its name, timing and events, and its table
    ("memories_immutable BEFORE UPDATE ON memories_memory"); `body` is the plpgsql between `$$` and
    `$$`, from DECLARE or BEGIN to END; `when`, a condition on OLD and NEW that a row must meet for the
    function to run.
    """
    name, fires_on = declaration.split(" ", 1)
    table = fires_on.rsplit(" ON ", 1)[1]
    runs = f"FOR EACH ROW WHEN ({when})\n  EXECUTE FUNCTION" if when else "FOR EACH ROW EXECUTE FUNCTION"
    create = (
        f"\nCREATE OR REPLACE FUNCTION {function}() RETURNS trigger\nLANGUAGE plpgsql AS $$\n{body}$$;\n"
        f"DROP TRIGGER IF EXISTS {name} ON {table};\n"
        f"CREATE TRIGGER {name} {fires_on}\n  {runs} {function}();\n"
    )
    drop = f"\nDROP TRIGGER IF EXISTS {name} ON {table};\nDROP FUNCTION IF EXISTS {function}();\n"
    return create, drop
