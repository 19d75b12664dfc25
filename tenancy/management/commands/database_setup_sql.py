"""Prints the one-time SQL a database administrator runs where Archivist's own user may not create roles."""

from __future__ import annotations

import re

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenancy.sql import APP_ROLE, MAINTENANCE_ROLE

# A plain PostgreSQL identifier, so the script needs no quoting a reader must check.
IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# Each role as the migrations would have made it: no privilege beyond logging in, where it logs in.
ATTRIBUTES = "NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION"


def _role(name: str, *, login: bool) -> str:
    return (
        f"  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{name}') THEN\n"
        f"    CREATE ROLE {name} {'LOGIN' if login else 'NOLOGIN'} {ATTRIBUTES};\n"
        "  END IF;\n"
    )


def setup_sql(*, owner: str, web_user: str, database: str) -> str:
    """The script: the roles the migrations would create, the two login roles, the database and pgvector."""
    return (
        "-- Archivist's one-time database setup, run by an administrator as a role that may create roles,\n"
        "-- databases and extensions: psql -v ON_ERROR_STOP=1 -f this-file. It may be run again.\n"
        "-- Set the login roles' passwords apart (\\password in psql), never in a file.\n"
        "DO $$\nBEGIN\n"
        f"{_role(APP_ROLE, login=False)}"
        f"{_role(MAINTENANCE_ROLE, login=False)}"
        f"{_role(owner, login=True)}"
        f"{_role(web_user, login=True)}"
        "END\n$$;\n"
        f"-- {owner} owns the tables and runs migrations, the worker and beat; row-level security's\n"
        f"-- maintenance policies read every organisation's rows through {MAINTENANCE_ROLE}.\n"
        f"GRANT {MAINTENANCE_ROLE} TO {owner};\n"
        f"-- {web_user} serves requests as {APP_ROLE}: the rows of the request's organisation and no others.\n"
        f"GRANT {APP_ROLE} TO {web_user};\n"
        f"SELECT 'CREATE DATABASE {database} OWNER {owner}'\n"
        f"  WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '{database}')\\gexec\n"
        f"\\connect {database}\n"
        "-- pgvector is not a trusted extension: only an administrator may create it.\n"
        "CREATE EXTENSION IF NOT EXISTS vector;\n"
    )


class Command(BaseCommand):
    help = (
        "Print the SQL an administrator runs once (with psql) to create Archivist's roles, database and pgvector, "
        "for a server where Archivist's own database user may not create roles or extensions."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", default="archivist", help="Login role that owns the tables (migrations).")
        parser.add_argument("--web-user", default="archivist_web", help="Login role the web server connects as.")
        parser.add_argument("--database", default="archivist", help="The database to create.")

    def handle(self, *args, owner: str, web_user: str, database: str, **options) -> None:
        names = {"--owner": owner, "--web-user": web_user, "--database": database}
        for option, value in names.items():
            if not IDENTIFIER.fullmatch(value):
                raise CommandError(
                    f"{option} must be a lowercase PostgreSQL name of at most 63 letters, digits and underscores, "
                    f"starting with a letter or underscore; {value!r} is not."
                )
        if owner == web_user or {owner, web_user} & {APP_ROLE, MAINTENANCE_ROLE}:
            raise CommandError(
                f"--owner and --web-user must be two different roles, neither {APP_ROLE} nor {MAINTENANCE_ROLE}."
            )
        self.stdout.write(setup_sql(owner=owner, web_user=web_user, database=database), ending="")
