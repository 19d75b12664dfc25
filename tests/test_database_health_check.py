"""The per-request health check of a persistent connection sends no probe while the server has been silent, and
still replaces a connection the server ended (`lib.postgres`)."""

from __future__ import annotations

import select
import time

import psycopg
import pytest
from django.db import OperationalError, connections
from django.db.backends.postgresql import base as django_postgresql

from lib.postgres.base import DatabaseWrapper

pytestmark = pytest.mark.django_db(transaction=True)
connection = connections["default"]


@pytest.fixture(autouse=True)
def persistent(monkeypatch):
    """A connection kept across requests, as the web server keeps it (the test settings close it after each)."""
    connection.ensure_connection()
    monkeypatch.setattr(connection, "close_at", None)


@pytest.fixture
def probes(monkeypatch):
    """The `SELECT 1` probes Django's health check sends, counted."""
    sent = []
    probe = connection.is_usable

    def counted():
        sent.append(1)
        return probe()

    monkeypatch.setattr(connection, "is_usable", counted)
    return sent


def next_request() -> None:
    """What Django does between requests on a persistent connection: the next one is to be health-checked."""
    connection.close_if_unusable_or_obsolete()
    assert connection.health_check_enabled and not connection.health_check_done


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def end_the_backend(pid: int) -> None:
    """The server ends the connection, as a restart or an administrator would, and its word reaches the socket."""
    with psycopg.connect(**connection.get_connection_params()) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while not select.select([connection.connection.fileno()], [], [], 0.05)[0]:
        assert time.monotonic() < deadline, "the server's termination never reached the socket"


def test_the_backend_is_ours():
    assert isinstance(connection, DatabaseWrapper)
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True


def test_a_quiet_connection_is_used_without_a_probe(probes):
    pid = backend_pid()
    next_request()
    assert backend_pid() == pid
    assert probes == []
    # Control: Django's own check sends the probe for the same connection.
    next_request()
    django_postgresql.DatabaseWrapper.close_if_health_check_failed(connection)
    assert probes == [1]


def test_a_connection_the_server_ended_is_replaced_before_use(probes):
    pid = backend_pid()
    end_the_backend(pid)
    next_request()
    assert backend_pid() != pid  # a new connection, not an error
    assert probes == [1]  # the probe was sent because the socket had the server's last word


def test_without_the_check_the_ended_connection_fails(monkeypatch):
    """Control: the same sequence with the check skipped fails, so the test above passes because of the check."""
    pid = backend_pid()
    end_the_backend(pid)
    next_request()
    monkeypatch.setattr(DatabaseWrapper, "server_has_been_silent", lambda self: True)
    with pytest.raises(OperationalError):
        backend_pid()
    connection.close()
    monkeypatch.undo()
    assert backend_pid() != pid  # and a fresh connection serves again
