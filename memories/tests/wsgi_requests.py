"""One remember through a WSGI application, as a server calls it, its response left open until the caller
closes it: a test can look between the response written and the server's close (`request_finished`)."""

from __future__ import annotations

import json

from django.test import RequestFactory

REMEMBER_PATH = "/api/v1/memories"


def served(application, token: str, payload: dict):
    """(status line, the body's JSON, the response iterable, not yet closed)."""
    environ = (
        RequestFactory()
        .post(
            REMEMBER_PATH,
            data=json.dumps(payload),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        .environ
    )
    status: list[str] = []
    response = application(environ, lambda code, headers, exc_info=None: status.append(code))
    return status[0], json.loads(b"".join(response)), response
