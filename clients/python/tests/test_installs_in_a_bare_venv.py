"""`pip install ./clients/python` (and ./clients/mcp) works in a bare virtual environment, offline: from the
machine's local package index that pip is configured with, never the network. The installed client then
talks to the real server without Django anywhere in that environment."""

from __future__ import annotations

import shlex
import subprocess
import sys
import venv
from pathlib import Path

import pytest

CLIENTS = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def local_indexes() -> list[str]:
    """pip's own configured sources that are on this machine (file:// indexes, find-links folders)."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    args: list[str] = []
    indexes: list[str] = []
    for line in listed.splitlines():
        name, _, value = line.partition("=")
        values = shlex.split(value.strip().strip("'\""))
        if name.endswith("index-url"):
            indexes += [v for v in values if v.startswith("file://")]
        elif name.endswith("find-links"):
            for v in values:
                if Path(v.removeprefix("file://")).is_dir() and ["--find-links", v] != args[-2:]:
                    args += ["--find-links", v]
    if not indexes:
        return []
    return ["--index-url", indexes[0], *(a for i in indexes[1:] for a in ("--extra-index-url", i)), *args]


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    sources = local_indexes()
    if not sources:
        pytest.skip("pip is configured with no local package index on this machine")
    folder = tmp_path_factory.mktemp("bare-venv")
    venv.create(folder, with_pip=True)
    python = folder / "bin" / "python"
    # --isolated: no configuration or environment, so only the local sources named here are read.
    install = [
        str(python),
        "-m",
        "pip",
        "install",
        "--isolated",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
    ]
    done = subprocess.run(
        [*install, *sources, str(CLIENTS / "python"), str(CLIENTS / "mcp")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return python


def test_the_client_installs_offline_and_talks_to_the_server_without_django(bare_venv, live_api):
    script = (
        "import importlib.util, sys\n"
        "from archivist_client import Archivist\n"
        "assert importlib.util.find_spec('django') is None, 'django in a bare venv'\n"
        f"client = Archivist({live_api.url!r}, {live_api.token!r}, place={live_api.general!r})\n"
        "print(client.remember(body='From a bare venv', subject_type='workspace').scope)\n"
    )
    done = subprocess.run([str(bare_venv), "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "channel"


def test_the_mcp_server_installs_offline_with_its_console_script(bare_venv):
    script = bare_venv.parent / "archivist-mcp"
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--transport {stdio,http}" in done.stdout
