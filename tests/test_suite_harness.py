"""The suite's own harness (`make test` runs a pytest-xdist worker per core): each test process has its own Redis
and its own database, so one worker's Celery workers never take another's tasks, and the suite's cluster runs
without a flush to disk per commit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
from django.conf import settings
from django.db import connection


def test_this_test_process_has_its_own_redis():
    # A worker that inherited the first process's REDIS_URL shared its queues (and its rate counts) with the other.
    assert f"/redis/{os.getpid()}/" in settings.REDIS_URL
    assert settings.CACHES["default"]["LOCATION"].startswith(settings.REDIS_URL.split("?")[0])


@pytest.mark.django_db
def test_this_test_process_has_its_own_database():
    assert connection.settings_dict["NAME"].startswith(f"test_archivist_{os.getpid()}")


@pytest.mark.django_db
def test_the_suites_cluster_does_not_flush_to_disk_at_each_commit():
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('fsync'), current_setting('synchronous_commit')")
        assert cursor.fetchone() == ("off", "off")


@pytest.mark.django_db
def test_the_migrated_template_for_this_code_exists_so_the_next_process_clones_it():
    from tests import database_template

    with connection.cursor() as cursor:
        cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [database_template.PREFIX + "%"])
        templates = [name for (name,) in cursor.fetchall()]
    # One template, of this code: a changed migration or model names another, and the old one is dropped.
    assert templates == [database_template.template_name()]


class CollectedTest:
    """What the ordering reads of a collected test: its id, its fixtures and its markers."""

    def __init__(self, nodeid: str, *markers: str, fixtures: tuple[str, ...] = ()):
        self.nodeid, self.markers, self.fixturenames = nodeid, markers, fixtures

    def get_closest_marker(self, name: str):
        return name if name in self.markers else None


def test_browser_then_slow_and_grouped_modules_are_handed_out_first_each_module_whole():
    from tests.order import pytest_collection_modifyitems

    collected = [
        CollectedTest("a/test_fast.py::one"),
        CollectedTest("a/test_mixed.py::quick"),
        CollectedTest("a/test_mixed.py::starts_a_server", "slow"),
        CollectedTest("b/test_fast.py::two"),
        CollectedTest("b/test_grouped.py::shares_a_fixture", "xdist_group"),
        CollectedTest("c/test_pages.py::clicks", fixtures=("chromium",)),
        CollectedTest("c/test_fast.py::three"),
    ]
    pytest_collection_modifyitems(collected)  # type: ignore[arg-type]
    assert [test.nodeid for test in collected] == [
        "c/test_pages.py::clicks",
        "a/test_mixed.py::quick",  # its module has a slow test: the module moves, whole and in order
        "a/test_mixed.py::starts_a_server",
        "b/test_grouped.py::shares_a_fixture",
        "a/test_fast.py::one",  # the rest keep the order they were collected in
        "b/test_fast.py::two",
        "c/test_fast.py::three",
    ]


GROUPED_AND_NOT = """
import time

import pytest


@pytest.mark.xdist_group("one-worker")
@pytest.mark.parametrize("n", range(4))
def test_grouped(n):
    time.sleep(0.2)


@pytest.mark.parametrize("n", range(8))
def test_anywhere(n):
    time.sleep(0.2)
"""


def test_tests_of_one_xdist_group_run_on_one_worker(tmp_path):
    # `make test` relies on it: modules that share one server or one Chromium mark themselves with a group.
    (tmp_path / "test_groups.py").write_text(textwrap.dedent(GROUPED_AND_NOT))
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "xdist", "-n", "2", "--dist", "loadgroup", "-v", "-p",
         "no:cacheprovider",
         "--rootdir", str(tmp_path), str(tmp_path / "test_groups.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    ran = re.findall(r"\[(gw\d)\] .*PASSED \S+::(test_\w+)", done.stdout)
    assert len(ran) == 12, done.stdout
    assert len({worker for worker, name in ran if name == "test_grouped"}) == 1, done.stdout
    assert len({worker for worker, _ in ran}) == 2, done.stdout  # the positive control: both workers took tests
