"""The TypeScript workspace as the tests drive it: where it is, its packages, and npm run in it.

A missing Node, npm or `node_modules` is a failure naming the command that fixes it, never a skip.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

WORKSPACE = Path(__file__).resolve().parents[1]
PACKAGES = WORKSPACE / "packages"
NODE_MAJOR = 20


def package_names() -> list[str]:
    """Every package of the workspace: a folder under packages/ with a package.json."""
    return sorted(path.parent.name for path in PACKAGES.glob("*/package.json"))


def require_toolchain() -> None:
    """Fails the test unless Node 20 or later, npm and the workspace's node_modules are there."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail(
            f"Node.js {NODE_MAJOR} and npm are needed for the TypeScript clients' tests: install them (.ci/run)"
        )
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < NODE_MAJOR:
        pytest.fail(f"Node.js {NODE_MAJOR} or later is needed, found {version}: install it (.ci/run)")
    if not (WORKSPACE / "node_modules" / ".package-lock.json").exists():
        pytest.fail(f"{WORKSPACE}/node_modules is missing: run `make venv`, or `npm ci` in {WORKSPACE}")


def npm(*args: str, env: dict[str, str] | None = None, cwd: Path = WORKSPACE, timeout: float = 600):
    """Runs npm in the workspace, its output captured (stdout and stderr together)."""
    return subprocess.run(
        ["npm", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


@functools.cache
def _build() -> subprocess.CompletedProcess:
    with (WORKSPACE / "node_modules" / ".archivist-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return npm("run", "build")


def build_once() -> None:
    """Builds every package once per pytest process, one process at a time: tsc writes each package's dist/,
    and two builds writing the same files at once would leave a half-written one for the other's tests."""
    built = _build()
    if built.returncode:
        pytest.fail(f"npm run build failed:\n{built.stdout}")
