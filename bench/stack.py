"""The run command on a loopback port in a bench's own data folder: started, awaited, stopped.

`root` is the checkout whose code it serves, so a bench can run another revision beside this one
(`harness.exported_checkout`) with a stack of its own."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def healthy(port: int, timeout: float) -> bool:
    """Whether a server on this loopback port answers /healthz with 200."""
    try:
        return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=timeout).status_code == 200
    except requests.RequestException:
        return False


def reset(data_dir: Path) -> None:
    """Stop whatever a previous run left in the folder, then empty it.

    The settings are not loaded here: they would start PostgreSQL in the
    folder about to be deleted.
    """
    if (data_dir / "pg" / "postmaster.pid").exists():
        from config.embedded import stop_postgres  # the module alone: it loads no settings

        stop_postgres(data_dir / "pg")
    for pidfile in data_dir.glob("redis/**/redis.pid"):
        with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
            os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)


def stack_environment(data_dir: Path, port: int) -> dict[str, str]:
    """The run command's environment for a bench: its folder and port, no outside database, no rate limit."""
    env = {
        **os.environ,
        "ARCHIVIST_DATA_DIR": str(data_dir),
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "DJANGO_SETTINGS_MODULE": "config.settings.dev",
        "DJANGO_DEBUG": "0",
        "HF_HUB_OFFLINE": "1",
        # Loading thousands of turns is one agent's burst, not abuse.
        "ARCHIVIST_TOKEN_RATE": "1000000/min",
        "WEB_CONCURRENCY": "2",
        # One worker process: torch already uses both cores for a batch.
        "WORKER_CONCURRENCY": "1",
    }
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    return env


def start_stack(data_dir: Path, port: int, root: Path = ROOT) -> subprocess.Popen:
    """`python -m config.supervisor` of the checkout `root`, logging to data_dir/stack.log; waits for /healthz."""
    log = (data_dir / "stack.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "config.supervisor"],
        cwd=root,
        env=stack_environment(data_dir, port),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the run command exited with {process.returncode}; see {data_dir / 'stack.log'}")
        if healthy(port, 2):
            return process
        time.sleep(1)
    stop_stack(process)
    raise SystemExit(f"Archivist did not become healthy in time; see {data_dir / 'stack.log'}")


def stop_stack(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def manage(root: Path, data_dir: Path, script: str) -> str:
    """Run Python `script` with Django set up in checkout `root`, beside the stack serving `data_dir`; its stdout."""
    env = stack_environment(data_dir, 0)
    code = "import django\ndjango.setup()\n" + script
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"a management script failed in {root}: {done.stderr[-2000:]}")
    return done.stdout
