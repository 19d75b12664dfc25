"""Each package under clients/ installs into a bare virtual environment and works there without Django.

`./clients/python` and `./clients/mcp` install offline, from the local package index pip is configured with.
`./clients/langgraph` needs LangGraph and LangChain, whose dependencies that index does not all hold
(`langchain-protocol`), so it installs from the Python Package Index.
Each package is copied to a temporary folder first, so a build leaves nothing in the source tree.

The environments are made with uv (a pinned dev dependency): once per test session, in seconds where pip took
over a minute, with uv's download cache in the test data folder."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from uv import find_uv_bin

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


def copies_of(packages: list[str], folder: Path) -> list[str]:
    """The packages copied under `folder` without build leftovers, so pip builds there, not in the tree."""
    leftovers = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests")
    copies = []
    for package in packages:
        copy = folder / package
        shutil.copytree(CLIENTS / package, copy, ignore=leftovers)
        copies.append(str(copy))
    return copies


def uv(*arguments: str) -> None:
    env = dict(os.environ, UV_CACHE_DIR=str(Path(settings.DATA_DIR) / "uv-cache"), UV_NO_CONFIG="1")
    done = subprocess.run([find_uv_bin(), *arguments], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]


def new_venv(folder: Path, packages: list[str], *sources: str) -> Path:
    """A virtual environment of this Python's base interpreter, holding `packages` and what they need only."""
    uv("venv", "--quiet", "--python", sys.executable, str(folder / "venv"))
    python = folder / "venv" / "bin" / "python"
    uv("pip", "install", "--quiet", "--python", str(python), *sources, *copies_of(packages, folder))
    return python


@pytest.fixture(scope="session")
def bare_venv(tmp_path_factory):
    sources = local_indexes()
    if not sources:
        pytest.skip("pip is configured with no local package index on this machine")
    # --offline: nothing but the local sources named here is read.
    return new_venv(tmp_path_factory.mktemp("bare-venv"), ["python", "mcp"], "--offline", *sources)


@pytest.fixture(scope="session")
def langgraph_venv(tmp_path_factory):
    return new_venv(tmp_path_factory.mktemp("bare-langgraph-venv"), ["python", "langgraph"])


def test_the_client_installs_offline_and_talks_to_the_server_without_django(bare_venv, live_api):
    script = (
        "import importlib.util, sys\n"
        "from archivist_client import Archivist\n"
        "assert importlib.util.find_spec('django') is None, 'django in a bare venv'\n"
        f"client = Archivist({live_api.url!r}, {live_api.token!r}, place={live_api.general!r})\n"
        "print(client.remember(body='From a bare venv', subject_type='workspace').scope)\n"
        # The server's block rules ship inside the package: a client's block is render's.
        "from archivist_client.text import PREAMBLE, inline\n"
        "assert 'never on their own' in PREAMBLE and inline('pay\\u200bpal') == 'pay[U+200B]pal'\n"
    )
    done = subprocess.run([str(bare_venv), "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "channel"


def test_the_mcp_server_installs_offline_with_its_console_script(bare_venv):
    script = bare_venv.parent / "archivist-mcp"
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--transport {stdio,http}" in done.stdout


def test_the_langgraph_store_installs_and_keeps_a_memory_without_django(langgraph_venv, live_api):
    script = (
        "import importlib.util\n"
        "from archivist_langgraph import ArchivistStore\n"
        "assert importlib.util.find_spec('django') is None, 'django in a bare venv'\n"
        f"store = ArchivistStore({live_api.url!r}, {live_api.token!r}, places={{'C-general': {live_api.general!r}}})\n"
        "store.put(('subjects', 'C-general', 'workspace'), 'standup', {'content': 'Standup is at ten'})\n"
        "print(store.get(('subjects', 'C-general', 'workspace'), 'standup').value['content'])\n"
    )
    done = subprocess.run([str(langgraph_venv), "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Standup is at ten"
