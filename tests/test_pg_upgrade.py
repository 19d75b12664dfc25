"""A data folder made by PostgreSQL 16 (pgserver) is upgraded in place by the run command, its old copy kept;
a management command on one not yet upgraded says to run `make run` once; an upgrade that would not fit is
refused before anything changes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from config import embedded, pg_upgrade

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

# Today's embedded PostgreSQL 16 as it was: rows with vectors over two organisations, a partial HNSW index for each,
# row-level security on, and each organisation's nearest rows' distances to a question (rows at equal distances
# may come in either order).
MAKE_16_FOLDER = """
import json, sys, pgserver, psycopg
server = pgserver.get_server(sys.argv[1], cleanup_mode="stop")
server.psql('CREATE DATABASE archivist;')
with psycopg.connect(server.get_uri(database="archivist"), autocommit=True) as db:
    db.execute("CREATE EXTENSION vector")
    db.execute("CREATE TABLE memory (id bigint PRIMARY KEY, org int NOT NULL, embedding vector(8) NOT NULL)")
    db.execute("ALTER TABLE memory ENABLE ROW LEVEL SECURITY")
    db.execute("INSERT INTO memory SELECT g, g % 2, (SELECT array_agg(sin(g * k))::vector FROM generate_series(1, 8) k)"
               " FROM generate_series(1, 2000) g")
    nearest = {}
    db.execute("SET enable_seqscan = off")  # each organisation's own index, as after the upgrade
    for org in (0, 1):
        db.execute(f"CREATE INDEX memory_hnsw_{org} ON memory USING hnsw (embedding vector_cosine_ops)"
                   f" WHERE org = {org}")
        rows = db.execute("SELECT embedding <=> '[1,0,1,0,1,0,1,0]' AS d FROM memory WHERE org = %s"
                          " ORDER BY d LIMIT 10", (org,)).fetchall()
        nearest[org] = [round(row[0], 9) for row in rows]
print(json.dumps(nearest))
"""

# The run command's start of its PostgreSQL (Redis is not asked for), then its stop.
RUN_COMMAND_START = """
import sys
from pathlib import Path
from config import supervisor
folder, postgres, redis = supervisor._start_services({"REDIS_URL": "redis://unused"}, Path(sys.argv[1]))
supervisor._stop_services(folder, postgres, redis)
"""


@pytest.fixture
def outside_pytest_temp():
    """A folder the servers' own system users can reach: pytest makes its temporary root private again (0700)
    whenever another session starts, which would lock them out of tmp_path mid-test."""
    folder = Path(tempfile.mkdtemp(prefix="upgrade-", dir=os.environ["ARCHIVIST_DATA_DIR"]))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done


def test_the_run_command_upgrades_a_postgresql_16_folder_in_place_and_keeps_the_old_one(outside_pytest_temp):
    tmp_path = outside_pytest_temp
    folder = tmp_path / "pg"
    nearest_before = json.loads(run_python(MAKE_16_FOLDER, str(folder)).stdout)
    assert embedded.folder_major(folder) == 16

    said = run_python(RUN_COMMAND_START, str(tmp_path)).stdout

    kept = tmp_path / "pg-16-before-upgrade"
    assert embedded.folder_major(folder) == embedded.server_major() == 18
    assert embedded.folder_major(kept) == 16  # the old copy is kept, and said where, with how to delete it
    assert f"rm -rf {kept}" in said
    assert f"embedded {embedded.server_description()} in {folder}" in said
    server = embedded.postgres_server(folder)
    try:
        with psycopg.connect(server.get_uri(database="archivist")) as db:
            assert db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone() == ("0.8.6",)
            assert db.execute("SELECT count(*) FROM memory").fetchone() == (2000,)
            assert db.execute("SELECT current_setting('data_checksums')").fetchone() == ("off",)
            db.execute("SET enable_seqscan = off")
            for org in (0, 1):
                question = "'[1,0,1,0,1,0,1,0]'"
                plan = db.execute(
                    f"EXPLAIN SELECT id FROM memory WHERE org = {org} ORDER BY embedding <=> {question} LIMIT 10"
                ).fetchall()
                assert f"Index Scan using memory_hnsw_{org}" in plan[1][0]  # the partial index survived, in use
                rows = db.execute(
                    f"SELECT embedding <=> {question} AS d FROM memory WHERE org = %s ORDER BY d LIMIT 10", (org,)
                ).fetchall()
                assert [round(row[0], 9) for row in rows] == nearest_before[str(org)]
    finally:
        server.cleanup()


def manage(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(ARCHIVIST_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="config.settings.dev", HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("command", ["showmigrations", "migrate"])
def test_a_command_on_a_folder_not_yet_upgraded_says_to_run_make_run_once(tmp_path, command):
    (tmp_path / "pg").mkdir()
    (tmp_path / "pg" / "PG_VERSION").write_text("16\n")
    result = manage(command, data_dir=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "holds a PostgreSQL 16 database" in result.stderr
    assert "Run `make run` once" in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(path.name for path in (tmp_path / "pg").iterdir()) == ["PG_VERSION"]  # nothing started or made


def test_an_upgrade_that_would_not_fit_is_refused_and_changes_nothing(tmp_path):
    folder = tmp_path / "pg"
    folder.mkdir()
    (folder / "PG_VERSION").write_text("16\n")
    (folder / "base").write_bytes(b"\0" * 2**20)
    needed = 2**20 + 3 + pg_upgrade.SPACE_MARGIN_BYTES
    with pytest.raises(pg_upgrade.UpgradeRefused, match="Not enough free disk to upgrade .* nothing was changed"):
        pg_upgrade.upgrade_if_older(folder, say=print, free_bytes=needed - 1)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pg"]
    pg_upgrade.refuse_without_space(folder, needed)  # the control: just enough room is enough
