"""A pytest plugin (loaded by the root conftest): a test session leaves no process behind.

After every fixture is torn down, the session's Redis is stopped, and anything the
session started that still runs fails the run and is killed, so the next run starts
clean: its children (gunicorn, Celery, Chromium) and servers that daemonised (a
redis-server re-parents to init) on the session's folders.
"""

from __future__ import annotations

import importlib
import os

import psutil
import pytest


def session_folders(config) -> list[str]:
    """Folders whose processes belong to this session, each ending in a separator
    (so pytest-1 never matches pytest-12 of another session)."""
    folders = [str(config._tmp_path_factory.getbasetemp())]
    settings_module = importlib.import_module(os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings.test"))
    if getattr(settings_module, "TEST_REDIS_FOLDER", None):
        folders.append(str(settings_module.TEST_REDIS_FOLDER))
    return [folder.rstrip("/") + "/" for folder in folders]


def leftover_processes(folders: list[str]) -> list[psutil.Process]:
    found = {process.pid: process for process in psutil.Process().children(recursive=True)}
    for process in psutil.process_iter(attrs=["cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if process.pid != os.getpid() and any(folder in cmdline for folder in folders):
            found[process.pid] = process
    alive = []
    for process in found.values():
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    folders = session_folders(session.config)
    settings_module = importlib.import_module(os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings.test"))
    stop_test_redis = getattr(settings_module, "stop_test_redis", None)
    if stop_test_redis is not None:
        stop_test_redis()
    leftovers = leftover_processes(folders)
    if not leftovers:
        return
    described = []
    for process in leftovers:
        try:
            described.append(f"{process.pid} {' '.join(process.cmdline())[:200]}")
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(leftovers, timeout=5)
    session.config.get_terminal_writer().line(
        "processes left running by the test session (now killed):\n  " + "\n  ".join(described), red=True
    )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
