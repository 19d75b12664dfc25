"""The tarpit: refusals answered later by one thread of the worker's process, so holding a client costs a
socket, not a web worker. Pure: no Django."""

# A client that asks again before its last refusal's Retry-After ended is ignoring it; the gate
# (`lib.api.fair_share`) has such a refusal answered when that time ends, so a closed loop that ignores the
# server sends one request per connection per hold instead of thousands of refusals a second. gunicorn hands
# the application the client's socket (`gunicorn.socket`): the connection moves to a descriptor of its own,
# the worker's descriptor is pointed at an unconnected socket, and the application raises `ConnectionTaken`,
# an EPIPE, which gunicorn's sync and gthread workers take as a client gone (logged at debug, nothing written,
# no access-log line); their close then has nothing to shut down (a shutdown of the connection itself would
# send the client its end before the answer). One thread per process writes each answer when due and closes.

from __future__ import annotations

import errno
import heapq
import itertools
import os
import socket
import threading
import time
from email.utils import formatdate

SOCKET = "gunicorn.socket"
# What is left of a request's body is read before closing: a close with unread data sends a reset, which can
# make the client drop the answer it has not read yet.
DRAIN_BYTES = 65536


class ConnectionTaken(BrokenPipeError):
    """Raised by the WSGI application once the tarpit holds its connection: gunicorn's workers take an EPIPE
    as a client gone, write nothing and close their own descriptor."""

    def __init__(self) -> None:
        super().__init__(errno.EPIPE, "the connection is held by the tarpit")


def http_answer(protocol: str, status: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    """A whole HTTP/1 response that closes its connection, as bytes to write to the socket."""
    lines = [f"{protocol} {status}", *(f"{name}: {value}" for name, value in headers)]
    lines += [f"Date: {formatdate(usegmt=True)}", "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _taken(environ: dict) -> socket.socket | None:
    """The request's connection on a descriptor of its own, the server's pointed at an unconnected socket;
    None when the server offers no plain HTTP/1 socket (a test client, runserver, TLS, an async worker)."""
    client = environ.get(SOCKET)
    # A TLS socket or an async worker's wrapper cannot be written to raw; HTTP/2 frames its answers itself.
    if type(client) is not socket.socket or environ.get("SERVER_PROTOCOL") not in ("HTTP/1.0", "HTTP/1.1"):
        return None
    try:
        held = client.dup()
    except OSError:  # out of descriptors: answered at once instead
        return None
    try:
        with socket.socket(client.family, client.type) as placeholder:
            os.dup2(placeholder.fileno(), client.fileno(), inheritable=False)
    except OSError:
        held.close()
        return None
    return held


def _drain(connection: socket.socket) -> None:
    drained = 0
    while drained < DRAIN_BYTES:
        try:
            data = connection.recv(4096)
        except BlockingIOError:
            return
        if not data:
            return
        drained += len(data)


def _answer(connection: socket.socket, answer: bytes) -> None:
    """Write a held answer and close its connection (a client that left is simply closed)."""
    try:
        connection.setblocking(False)  # a few hundred bytes fit any send buffer; a stalled client is dropped
        connection.send(answer)
        connection.shutdown(socket.SHUT_WR)
        _drain(connection)
    except OSError:
        pass
    finally:
        connection.close()


class Tarpit:
    """Connections whose answer is due later, by due time; one thread of this process writes each when due."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, socket.socket, bytes]] = []
        self._order = itertools.count()  # ties by due time go first come, first served
        self._changed = threading.Condition()
        self._writer_pid = 0  # a forked worker starts its own thread: threads do not survive a fork

    def __len__(self) -> int:
        with self._changed:
            return len(self._due)

    def hold(
        self, environ: dict, answer: tuple[str, list[tuple[str, str]], bytes], *, seconds: float, most: int
    ) -> bool:
        """Take the request's connection and write `answer` (status, headers, body) to it `seconds` from now;
        False, taking nothing, when `most` connections are already held or the server offers no plain socket."""
        if environ.get("REQUEST_METHOD") == "HEAD":  # its answer has no body, which the bytes below carry
            return False
        with self._changed:
            if len(self._due) >= most:
                return False
            connection = _taken(environ)
            if connection is None:
                return False
            data = http_answer(environ["SERVER_PROTOCOL"], *answer)
            heapq.heappush(self._due, (time.monotonic() + seconds, next(self._order), connection, data))
            if self._writer_pid != os.getpid():
                self._writer_pid = os.getpid()
                threading.Thread(target=self._write_when_due, name="tarpit", daemon=True).start()
            self._changed.notify()
        return True

    def release_all(self) -> int:
        """Answer every held connection now (its worker is stopping): how many."""
        with self._changed:
            due, self._due = self._due, []
        for _, _, connection, data in due:
            _answer(connection, data)
        return len(due)

    def _write_when_due(self) -> None:
        while True:
            for connection, data in self._next_due():
                _answer(connection, data)

    def _next_due(self) -> list[tuple[socket.socket, bytes]]:
        with self._changed:
            while True:
                now = time.monotonic()
                if self._due and self._due[0][0] <= now:
                    due = []
                    while self._due and self._due[0][0] <= now:
                        _, _, connection, data = heapq.heappop(self._due)
                        due.append((connection, data))
                    return due
                self._changed.wait(self._due[0][0] - now if self._due else None)


# One per process: gunicorn's `worker_exit` hook releases what it holds (config/gunicorn.py).
tarpit = Tarpit()
