"""The suite's own harness (`make test` runs a pytest-xdist worker per core): each test process has its own Redis
and its own database, so one worker's Celery workers never take another's tasks, and the suite's cluster runs
without a flush to disk per commit."""

from __future__ import annotations

import os

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
