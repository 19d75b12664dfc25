"""The embedded PostgreSQL's page cache is sized for the machine (or as configured), from its next start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config import embedded

ROOT = Path(__file__).resolve().parent.parent

# A start of the embedded server in its own process, as a command would: the server stops when it exits.
START_AND_SHOW = (
    "import sys; from pathlib import Path; from config import embedded; "
    "server = embedded.start_postgres(Path(sys.argv[1])); print(server.psql('SHOW shared_buffers;'))"
)


def start_and_show(folder: Path, size: str) -> str:
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
    return done.stdout.split("\n")[2].strip()  # the value, under psql's header and rule


def test_a_data_folder_gets_its_size_from_its_next_start(tmp_path):
    folder = tmp_path / "pg"
    assert start_and_show(folder, "192MB") == "128MB"  # the first start: PostgreSQL's default, then set
    assert start_and_show(folder, "192MB") == "192MB"
    assert start_and_show(folder, "256MB") == "192MB"  # a new size is set, as PostgreSQL says, for the next
    assert start_and_show(folder, "256MB") == "256MB"


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
