"""The tarpit: a client refused again before its last refusal's Retry-After ended is answered when that ends,
by a thread that holds its connection, so the worker serves the next request meanwhile; the first refusal,
one past the cap of held connections, and one without gunicorn's socket are answered at once."""

from __future__ import annotations

import errno
import select
import socket
import time

import pytest
import requests
from django.core.cache import cache

from accounts.services import agent_create, organisation_create
from config.gunicorn import worker_exit
from lib.api.tarpit import tarpit
from lib.metrics import REFUSALS_HELD, REQUESTS_REFUSED
from tests.wsgi_gate import GateClient
from web.tests.browser import gunicorn_serving

PLACES = "/api/v1/places"
HELD_AT_MOST = 2  # per worker process, on the server below


@pytest.fixture(scope="module")
def one_worker(request, django_db_setup, django_db_blocker):
    """gunicorn with one sync worker and the run command's hooks: it takes connections in the order they
    came, so what it answered before another request is known. Tokens may make 2 calls an hour; a held
    refusal waits at most 5 s (time for the request sent after it); at most two are held."""
    with gunicorn_serving(
        request,
        django_db_blocker,
        "gunicorn-tarpit",
        workers=1,
        GUNICORN_CMD_ARGS="--config python:config.gunicorn",
        ARCHIVIST_TOKEN_RATE="2/hour",
        ARCHIVIST_REFUSAL_HOLD_MS="5000",
        ARCHIVIST_REFUSALS_HELD_PER_WORKER=str(HELD_AT_MOST),
    ) as url:
        yield url


def tenant_token(slug: str) -> str:
    return agent_create(organisation=organisation_create(slug=slug), name="agent")[1]


def sent(url: str, token: str) -> socket.socket:
    """A GET of the places with `token` on a connection of its own, sent and not yet read."""
    host, port = url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=20)
    connection.sendall(f"GET {PLACES} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    return connection


def answered(connections: list[socket.socket]) -> list[bool]:
    """Whether each connection has something to read (an answer, or its close) right now."""
    readable = set(select.select(connections, [], [], 0)[0])
    return [connection in readable for connection in connections]


def read_to_close(connection: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Everything the server writes before it closes the connection: status, headers and body."""
    data = b""
    with connection:
        while chunk := connection.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split()[1]), headers, body


def away_from_an_hour_edge() -> None:
    while time.time() % 3600 > 3590:  # the rate counts per hour: every call in one window
        time.sleep(1)


def test_a_client_ignoring_retry_after_is_answered_late_without_holding_the_worker(one_worker, transactional_db):
    cache.clear()
    away_from_an_hour_edge()
    flood, quiet = tenant_token("flood"), tenant_token("quiet")
    headers = {"Authorization": f"Bearer {flood}"}
    assert [requests.get(f"{one_worker}{PLACES}", headers=headers, timeout=20).status_code for _ in range(2)] == [
        200,
        200,
    ]
    first = sent(one_worker, flood)  # past its rate: refused, the first time
    repeats = [sent(one_worker, flood) for _ in range(HELD_AT_MOST + 1)]  # before that refusal's Retry-After
    # Sent after all of them to the one worker, which took them in order: answered while two are still held.
    other = requests.get(f"{one_worker}{PLACES}", headers={"Authorization": f"Bearer {quiet}"}, timeout=20)
    assert other.status_code == 200
    assert answered([first, *repeats]) == [True, False, False, True], (
        "the first refusal and the one past the cap answered at once, the two repeats held"
    )
    for connection in [first, *repeats]:
        status, answer_headers, body = read_to_close(connection)
        assert status == 429 and 1 <= int(answer_headers["Retry-After"]) <= 3600
        assert answer_headers["Connection"] == "close" and answer_headers["Content-Type"] == "application/json"
        assert body.startswith(b'{"error": "throttled"') and len(body) == int(answer_headers["Content-Length"])


def guess(**environ):
    """An unknown token from one address, through the WSGI gate in process."""
    return GateClient(f"Bearer arch_guess{time.monotonic_ns()}").get(PLACES, REMOTE_ADDR="203.0.113.7", **environ)


@pytest.mark.django_db
def test_a_refusal_is_held_only_with_gunicorns_socket_and_counted(settings):
    cache.clear()
    settings.BAD_TOKEN_RATE, settings.REFUSAL_HOLD_MS = "2/min", 200
    while time.time() % 60 > 50:  # the bar counts per minute
        time.sleep(1)
    assert [guess().status_code for _ in range(2)] == [401, 401]
    assert guess().status_code == 429, "barred: the first refusal"
    before = REFUSALS_HELD.labels(reason="bad_tokens_from_address")._value.get()
    assert guess().status_code == 429, "a repeat, answered at once where no gunicorn socket is offered"
    assert REFUSALS_HELD.labels(reason="bad_tokens_from_address")._value.get() == before
    # The positive control: the same repeat with a socket is held, and its answer written later on that socket.
    client, server_side = socket.socketpair()
    refused_before = REQUESTS_REFUSED.labels(reason="bad_tokens_from_address")._value.get()
    with server_side, pytest.raises(OSError) as taken:
        guess(**{"gunicorn.socket": server_side, "SERVER_PROTOCOL": "HTTP/1.1"})
    assert taken.value.errno == errno.EPIPE, "gunicorn's workers take it as a client gone"
    assert REFUSALS_HELD.labels(reason="bad_tokens_from_address")._value.get() == before + 1
    assert REQUESTS_REFUSED.labels(reason="bad_tokens_from_address")._value.get() == refused_before + 1
    client.settimeout(20)
    status, headers, body = read_to_close(client)
    assert status == 429 and headers["Connection"] == "close" and b"unknown or malformed tokens" in body


def test_a_stopping_worker_answers_what_it_holds_at_once():
    client, server_side = socket.socketpair()
    environ = {"gunicorn.socket": server_side, "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": "GET"}
    answer = ("429 Too Many Requests", [("Retry-After", "1")], b"{}")
    with client, server_side:
        assert tarpit.hold(environ, answer, seconds=3600, most=1)
        assert not tarpit.hold(environ, answer, seconds=3600, most=1), "past the cap: not held"
        assert answered([client]) == [False], "held"
        worker_exit(None, None)
        client.settimeout(20)
        assert read_to_close(client)[0] == 429
    assert len(tarpit) == 0
