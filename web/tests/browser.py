"""The browser harness, a pytest plugin loaded by the root conftest (`pytest_plugins`), so any app's
browser tests get `page`, `chromium` and `gunicorn_server`, and a screenshot when they fail.

The browser tests run the real server: gunicorn, in its own process, on the
pytest database of this run, driven by Debian's Chromium through Playwright.
Rows written by a test (under `transactional_db`) are committed, so gunicorn
sees them; pytest-django flushes them after the test.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = os.environ.get("ARCHIVIST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_SECONDS = 60


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the groups
def pytest_collection_modifyitems(items):
    """Every test that drives Chromium runs on one worker of `make test` (pytest-xdist's `loadgroup`), so one
    browser and its server serve them all."""
    for item in items:
        if "chromium" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("browser"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the item, so a fixture can tell whether the test failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


def database_url(settings_dict: dict) -> str:
    """A postgres:// URL for Django's connection settings, Unix-socket hosts included."""
    user = quote(settings_dict.get("USER") or "", safe="")
    password = quote(settings_dict.get("PASSWORD") or "", safe="")
    credentials = f"{user}:{password}@" if user or password else ""
    host = settings_dict.get("HOST") or ""
    name = quote(settings_dict["NAME"], safe="")
    if host.startswith("/"):
        return f"postgresql://{credentials}/{name}?host={quote(host, safe='/')}"
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    return f"postgresql://{credentials}{host}{port}/{name}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_serving(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not answer {url} within {SERVER_START_SECONDS}s:\n{log.read_text()[-4000:]}")


class Gunicorn:
    """gunicorn on 127.0.0.1:<free port>, on this run's test database and Redis, logging to `log`.

    `env` adds to (or overrides) the server's environment, e.g. ARCHIVIST_DB_ROLE.
    """

    def __init__(self, log: Path, *, settings_dict: dict, workers: int = 2, **env: str):
        self.log = log
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        server_env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="config.settings.test",
            DATABASE_URL=database_url(settings_dict),
            REDIS_URL=os.environ["REDIS_URL"],
            DJANGO_DEBUG="0",
            # Each request closes its connection, so the flush after a test and
            # the drop at the end never wait on an idle gunicorn connection.
            DATABASE_CONN_MAX_AGE="0",
            ARCHIVIST_EMBEDDER="none",
        )
        server_env.update(env)
        command = [
            str(Path(sys.executable).parent / "gunicorn"),
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--access-logfile",
            "-",
            # No control socket: ~/.gunicorn/gunicorn.ctl is shared by every gunicorn on the machine.
            "--no-control-socket",
            "--graceful-timeout",
            "5",
            "--timeout",
            "120",
        ]
        with log.open("wb") as output:
            self.process = subprocess.Popen(command, cwd=REPO, env=server_env, stdout=output, stderr=subprocess.STDOUT)
        try:
            _wait_until_serving(f"{self.url}/accounts/login/", self.process, log)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        # SIGTERM to the master (the process started here) stops its workers too.
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


@pytest.fixture(scope="session")
def gunicorn_server(request, django_db_setup, django_db_blocker):
    """The real server on 127.0.0.1:<free port>, using this run's test database and Redis.

    Yields its base URL. It is stopped before pytest-django drops the test
    database, since an open connection would block the drop. Its log stays in
    test-artifacts/ when a test failed.
    """
    with gunicorn_serving(request, django_db_blocker, "gunicorn") as url:
        yield url


@contextmanager
def gunicorn_serving(request, django_db_blocker, name: str, **options) -> Iterator[str]:
    """A `Gunicorn` (with `options`) on this run's test database: its base URL. Its log,
    test-artifacts/<name>-<pid>.log, is removed unless a test failed."""
    from django.db import connection

    with django_db_blocker.unblock():
        settings_dict = dict(connection.settings_dict)
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / f"{name}-{os.getpid()}.log"
    server = Gunicorn(log, settings_dict=settings_dict, **options)
    try:
        yield server.url
    finally:
        server.stop()
        if not request.session.testsfailed:
            log.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def chromium(tmp_path_factory, gunicorn_server):
    """Headless Debian Chromium with a fresh profile, shared by the browser tests of this run.

    Relative URLs resolve against the server, so a test says `page.goto("/me/memories")`.
    """
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop on this thread; the tests'
    # own ORM calls are plain synchronous code and safe here.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    profile = tmp_path_factory.mktemp("chromium-profile")
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(profile),
                executable_path=CHROMIUM,
                headless=True,
                args=CHROMIUM_ARGS,
                accept_downloads=True,
                base_url=gunicorn_server,
            )
            context.set_default_timeout(10_000)
            yield context
            context.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(request, chromium, transactional_db):
    """A fresh tab with no cookies; a screenshot lands in test-artifacts/ when the test fails."""
    chromium.clear_cookies()
    tab = chromium.new_page()
    yield tab
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        name = request.node.nodeid.replace("/", "_").replace("::", "__")
        tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    tab.close()
