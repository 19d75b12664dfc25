"""Requests sent in this process through the WSGI application gunicorn serves (the fair share's gate around
Django), where Django's test client would pass the gate by: the rules the gate enforces are tested there."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from lib.api.fair_share import FairShareGate


@dataclass
class GateResponse:
    """A WSGI answer, read the way a test reads the test client's: status_code, headers by name, json()."""

    status_code: int
    headers: dict[str, str]
    content: bytes
    cycles: list = field(default_factory=list)  # the Django request cycles it started

    def __getitem__(self, name: str) -> str:
        return self.headers[name]

    def json(self):
        return json.loads(self.content)


class GateClient:
    """GETs through `FairShareGate(WSGIHandler())`, with the Authorization and address given."""

    def __init__(self, authorization: str = ""):
        self.authorization = authorization
        self.application = FairShareGate(WSGIHandler())

    def get(self, path: str, REMOTE_ADDR: str = "127.0.0.1", **extra) -> GateResponse:  # noqa: N803 - as Django names it
        environ = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "testserver",
            "SERVER_PORT": "80",
            "REMOTE_ADDR": REMOTE_ADDR,
            "wsgi.input": io.BytesIO(),
            "wsgi.url_scheme": "http",
            "wsgi.errors": io.StringIO(),
            **({"HTTP_AUTHORIZATION": self.authorization} if self.authorization else {}),
            **extra,
        }
        answered: dict = {}

        def start_response(status, headers, exc_info=None):
            answered.update(status=int(status.split()[0]), headers=dict(headers))

        cycles: list = []

        def started(sender, **kwargs):
            cycles.append(sender)

        # As Django's test client does: the test's transaction holds the connection, which must not be closed.
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        request_started.connect(started, weak=False)
        try:
            body = b"".join(self.application(environ, start_response))
        finally:
            request_started.disconnect(started)
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)
        return GateResponse(answered["status"], answered["headers"], body, cycles)
