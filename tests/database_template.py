"""A migrated template database, so each test process clones its database instead of migrating its own.

The first process of a run to find no template for this code migrates its database as usual, then copies it as
the template; every later process (another pytest-xdist worker, the next run) gets its database with
`CREATE DATABASE ... TEMPLATE`, which takes a fraction of a second where the migrations take several. The
template's name carries a hash of the code the migrations may import, so a changed migration, SQL module or model
makes a new one (and the old ones are dropped).
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

from django.db import connection, connections

ROOT = Path(__file__).resolve().parent.parent
# What a migration may run: the migrations and every module of the apps they import from (SQL, models, rules).
HASHED_FOLDERS = ("accounts", "admissions", "memories", "tenancy", "threads", "lib", "config")
PREFIX = "test_archivist_template_"


def template_name() -> str:
    digest = hashlib.sha256()
    for folder in HASHED_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "tests" not in path.relative_to(ROOT).parts:
                digest.update(str(path.relative_to(ROOT)).encode())
                digest.update(path.read_bytes())
    return PREFIX + digest.hexdigest()[:16]


def _existing(cursor, name: str) -> bool:
    cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
    return cursor.fetchone() is not None


def clone_from_template(test_name: str) -> bool:
    """Make `test_name` a copy of this code's template; False when there is no template yet."""
    template = template_name()
    with connection._nodb_cursor() as cursor:
        if not _existing(cursor, template):
            return False
        cursor.execute(f'DROP DATABASE IF EXISTS "{test_name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{test_name}" TEMPLATE "{template}"')
    return True


def save_as_template(test_name: str) -> None:
    """Copy the freshly migrated `test_name` as this code's template, and drop the templates of older code."""
    template = template_name()
    connections.close_all()  # a database with a session open cannot be a template's source
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [PREFIX + "%"])
        for (stale,) in cursor.fetchall():
            if stale != template:
                cursor.execute(f'DROP DATABASE IF EXISTS "{stale}" WITH (FORCE)')
        if not _existing(cursor, template):
            cursor.execute(f'CREATE DATABASE "{template}" TEMPLATE "{test_name}"')


def drop(test_name: str) -> None:
    connections.close_all()
    with connection._nodb_cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{test_name}" WITH (FORCE)')


def end_other_sessions(test_name: str) -> None:
    """End the sessions still open on `test_name` once this thread's are closed, so the plain `DROP DATABASE`
    pytest-django runs for a database it created does not fail on them. An idle one is a connection a test's
    thread opened and never closed, ended quietly; a busy one is work still running at the session's end, named
    in a warning."""
    connections.close_all()
    with connection._nodb_cursor() as cursor:
        cursor.execute(
            "SELECT application_name, state, left(query, 200), pg_terminate_backend(pid)"
            " FROM pg_stat_activity WHERE datname = %s",
            [test_name],
        )
        busy = [row[:3] for row in cursor.fetchall() if row[1] not in ("idle", None)]
    if busy:
        warnings.warn(f"sessions still busy on {test_name} at the end of the run, ended: {busy}", stacklevel=2)
