"""The embedded PostgreSQL's page cache is sized for the machine (or as configured), and pg_stat_statements is
preloaded, from its next start; the server is the release config/embedded.py names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_a_data_folder_gets_its_size_and_preloads_statement_statistics_from_its_next_start(tmp_path):
    folder = tmp_path / "pg"
    seen = [start_and_show(folder, "192MB")]
    assert seen[-1][0] == "128MB"  # the first start: PostgreSQL's default, then set
    seen.append(start_and_show(folder, "192MB"))
    assert seen[-1][0] == "192MB"
    seen.append(start_and_show(folder, "256MB"))
    assert seen[-1][0] == "192MB"  # a new size is set, as PostgreSQL says, for the next
    seen.append(start_and_show(folder, "256MB"))
    assert seen[-1][0] == "256MB"
    # pg_stat_statements likewise: set at the first start, loaded from the second.
    assert [preloaded for _, preloaded, _ in seen] == ["", *["pg_stat_statements"] * 3]
    postgres_version, _ = embedded.installed_versions(embedded.binaries_folder())
    assert {version for _, _, version in seen} == {postgres_version}
    assert embedded.server_description().startswith(f"PostgreSQL {postgres_version} + pgvector 0.8.")


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
