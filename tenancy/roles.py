"""Which PostgreSQL role a process's connections act as."""

# `settings.DATABASE_ROLE` (environment `ARCHIVIST_DB_ROLE`) names a role to
# `SET ROLE` to as soon as Django opens a connection: the run command starts the
# web server with `archivist_app`, so requests are under row-level security
# even on the embedded default, where every process logs in as the superuser.
# Empty (the default) keeps the login role: migrations, management commands and
# the workers, which run cross-tenant maintenance as the owner. A standby's
# connections (`DATABASE_REPLICA_URL`) always act as `archivist_app`: they serve
# requests' reads and nothing else.
#
# In production the stronger form is a login role that is a member of
# `archivist_app` and nothing else (a separate DATABASE_URL for the web), so a
# request has no more privileged role to return to (docs/SECURITY.md).

from __future__ import annotations

from django.conf import settings
from django.db import connection as default_connection
from psycopg import sql

from tenancy.sql import APP_ROLE

REPLICA = "replica"  # the standby's connection alias (`tenancy.standby`)


def role_for(alias: str) -> str:
    """The role a connection of this alias acts as: the process's on the primary; always `archivist_app` on a
    standby (`tenancy.standby`), which serves requests' reads only."""
    if alias == REPLICA:
        return APP_ROLE
    return getattr(settings, "DATABASE_ROLE", "") if alias == "default" else ""


def switch_role_on_connect(sender, connection, **kwargs) -> None:
    role = role_for(connection.alias)
    if not role or connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        # Session-level on purpose: the role is the process's, for the life of the connection.
        cursor.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)).as_string(connection.connection))


def current_role(connection=default_connection) -> str:
    """The role queries on this connection are checked as."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        return cursor.fetchone()[0]
