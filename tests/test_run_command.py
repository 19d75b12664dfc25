"""The run command on the embedded default: starts everything, serves, and stops cleanly on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(data_dir: Path, port: int) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        ARCHIVIST_DATA_DIR=str(data_dir),
        PORT=str(port),
        DJANGO_SETTINGS_MODULE="config.settings.dev",
        WEB_CONCURRENCY="1",
        WORKER_CONCURRENCY="1",
        ARCHIVIST_EMBEDDER="none",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "config.supervisor"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _wait_healthy(port: int, process: subprocess.Popen, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "the run command exited early"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
                return json.load(response)
        except OSError:
            time.sleep(0.5)
    raise AssertionError("the run command never became healthy")


def _read_until_running(process: subprocess.Popen, timeout: float = 120) -> str:
    """The run's output up to its "running" line (the run fails the test if it exits first)."""
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        assert line, "the run command exited early:\n" + "".join(lines)
        lines.append(line)
        if "Archivist is running" in line:
            return "".join(lines)
    raise AssertionError("the run command never said it was running:\n" + "".join(lines))


def _interrupt(process: subprocess.Popen) -> str:
    # Ctrl-C reaches the whole foreground process group.
    os.killpg(process.pid, signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    return output


def _servers_in(data_dir: Path) -> list[str]:
    found = []
    for proc in psutil.process_iter(attrs=["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(data_dir) in cmdline:
            found.append(cmdline)
    return found


def test_run_command_serves_and_stops_cleanly_and_keeps_its_data(tmp_path):
    data_dir = tmp_path / "var"
    port = _free_port()
    process = _start(data_dir, port)
    said = ""
    try:
        said = _read_until_running(process)
        # "running" is said once the web answers and every web worker and pool child is warm.
        assert {path.name.split("-")[0] for path in (data_dir / "warm").iterdir()} == {"web", "worker"}
        health = _wait_healthy(port, process, timeout=0.5)
        assert health["status"] == "ok"
        assert said.index("with password:") < said.index(f"Archivist is running at http://127.0.0.1:{port}/")
        assert json.loads((data_dir / "run.json").read_text())["phase"] == "running"
        assert {name: check["ok"] for name, check in health["checks"].items()} == {
            "database": True,
            "migrations": True,
            "redis": True,
        }
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/login/", timeout=5) as response:
            assert response.status == 200
            assert b"password" in response.read().lower()
    finally:
        first_output = said + _interrupt(process)
    assert process.returncode == 0, first_output
    assert first_output.count("Archivist is running") == 1
    assert _servers_in(data_dir) == [], "PostgreSQL or Redis outlived the run command"
    assert (data_dir / "pg" / "PG_VERSION").exists()

    # The data folder persists: the second run finds the administrator and prints no password.
    process = _start(data_dir, port)
    try:
        assert _wait_healthy(port, process)["status"] == "ok"
    finally:
        second_output = _interrupt(process)
    assert "with password:" not in second_output
    assert _servers_in(data_dir) == []


def test_one_run_per_data_folder_a_second_is_refused_and_one_after_ctrl_c_waits_then_serves(tmp_path):
    data_dir = tmp_path / "var"
    port = _free_port()
    first = _start(data_dir, port)
    try:
        _read_until_running(first)
        state = json.loads((data_dir / "run.json").read_text())
        assert state["pid"] == first.pid and state["phase"] == "running"
        assert (data_dir / "gunicorn.ctl").exists(), "gunicorn's control socket belongs in the data folder"

        # A second run on the same folder is refused at once, naming the holder.
        second = _start(data_dir, _free_port())
        output, _ = second.communicate(timeout=30)
        assert second.returncode == 1, output
        assert f"pid {first.pid}" in output and "not started" in output
        assert "embedded PostgreSQL" not in output, "the refused run touched the folder's servers"

        # manage.py never takes the lock: it works beside the running server.
        env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "REDIS_URL"}}
        env.update(ARCHIVIST_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="config.settings.dev")
        beside = subprocess.run(
            [sys.executable, "manage.py", "showmigrations", "accounts"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert beside.returncode == 0, beside.stdout + beside.stderr
        assert _wait_healthy(port, first)["status"] == "ok"

        # Ctrl-C, and at once another run: it waits for the stopping one, then comes up healthy.
        os.killpg(first.pid, signal.SIGINT)
        third = _start(data_dir, port)
    except BaseException:
        _interrupt(first)
        raise
    try:
        first_output, _ = first.communicate(timeout=60)
        assert first.returncode == 0, first_output
        health = _wait_healthy(port, third)
        assert health["status"] == "ok", health
        assert all(check["ok"] for check in health["checks"].values()), health
        assert json.loads((data_dir / "run.json").read_text())["pid"] == third.pid
    finally:
        third_output = _interrupt(third)
    assert "waiting for the run that is stopping" in third_output, third_output
    assert third.returncode == 0, third_output
    assert json.loads((data_dir / "run.json").read_text())["phase"] == "stopped"
    assert _servers_in(data_dir) == []
