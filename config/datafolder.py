"""A management command pointed at the wrong data folder says so, instead of creating a second, empty database.

With no `DATABASE_URL`, settings start the embedded PostgreSQL in
`ARCHIVIST_DATA_DIR/pg`, creating it when it is missing. For `migrate` (and
the run command, which migrates first) that is what is wanted; for any other
command it means the command was pointed somewhere the server never ran, and
would answer from an empty database or fail with a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

from config import embedded

# Commands that create or need no migrated database.
NEEDS_NO_DATABASE = frozenset(
    {"migrate", "makemigrations", "check", "diffsettings", "help", "version", "--help", "-h", "--version"}
)


def data_folder() -> Path:
    return Path(os.environ.get("ARCHIVIST_DATA_DIR", "var")).expanduser().resolve()


def data_folder_problem(argv: list[str]) -> str:
    """Why this command should not run against the embedded data folder, or "" when it may."""
    if os.environ.get("DATABASE_URL") or os.environ.get("DJANGO_SETTINGS_MODULE", "").endswith(".test"):
        return ""  # the test settings keep their own folder
    folder = data_folder()
    try:
        # Every command's settings start the server, which cannot open an older release's folder.
        embedded.refuse_older_folder(folder / "pg")
    except embedded.OlderDataFolder as older:
        return str(older)
    if len(argv) < 2 or argv[1] in NEEDS_NO_DATABASE:
        return ""
    if (folder / "pg" / "PG_VERSION").exists():
        return ""
    return (
        f"No Archivist database in {folder / 'pg'} (the data folder {folder}).\n"
        "Point this command at the folder the server uses, e.g. ARCHIVIST_DATA_DIR=/path/to/var "
        f"python manage.py {argv[1]} ..., or set DATABASE_URL; run `python manage.py migrate` (or `make run`) "
        "there first to create one."
    )


def unmigrated_problem(argv: list[str]) -> str:
    """After setup: the folder holds a database that was never migrated."""
    if os.environ.get("DATABASE_URL") or len(argv) < 2 or argv[1] in NEEDS_NO_DATABASE:
        return ""
    if os.environ.get("DJANGO_SETTINGS_MODULE", "").endswith(".test"):
        return ""
    from django.db import connection
    from django.db.utils import OperationalError

    try:
        tables = connection.introspection.table_names()
    except OperationalError as error:
        return f"Cannot reach the database of {data_folder()}: {error}"
    if "django_migrations" in tables:
        return ""
    return (
        f"The database in {data_folder() / 'pg'} has never been migrated. Run `python manage.py migrate` there, "
        "or point ARCHIVIST_DATA_DIR (or DATABASE_URL) at the server's own data."
    )
