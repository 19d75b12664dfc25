"""The API docs render in a real browser from this server alone, with no CSP violation."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_the_docs_page_renders_every_endpoint_offline_under_the_csp(page, gunicorn_server):
    problems: list[str] = []
    requested: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("request", lambda request: requested.append(request.url))
    page.goto("/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "Archivist API" in page.inner_text(".swagger-ui .info .title")
    page.wait_for_selector('.opblock-summary-path[data-path="/api/v1/recall"]')
    assert page.locator(".opblock").count() >= 13
    assert not [problem for problem in problems if "Content Security Policy" in problem or "Refused" in problem]
    assert all(url.startswith(gunicorn_server) for url in requested), [
        url for url in requested if not url.startswith(gunicorn_server)
    ]
