"""Every endpoint is in the OpenAPI schema with an example, and the docs page works offline under the CSP."""

from __future__ import annotations

import pytest
import yaml

ENDPOINTS = [
    ("/api/v1/memories", "get"),
    ("/api/v1/memories", "post"),
    ("/api/v1/memories/{memory_id}", "get"),
    ("/api/v1/memories/{memory_id}", "delete"),
    ("/api/v1/memories/{memory_id}/supersede", "post"),
    ("/api/v1/memories/{memory_id}/pin", "post"),
    ("/api/v1/memories/{memory_id}/unpin", "post"),
    ("/api/v1/recall", "post"),
    ("/api/v1/render", "post"),
    ("/api/v1/injections/{turn_id}", "get"),
    ("/api/v1/injections/{turn_id}/replay", "post"),
    ("/api/v1/subjects/{subject_type}/{subject_id}/memories", "get"),
    ("/api/v1/subjects/{subject_type}/{subject_id}/erase", "post"),
]


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from rest_framework.test import APIClient

    with django_db_blocker.unblock():
        response = APIClient().get("/api/schema/")
    assert response.status_code == 200
    return yaml.safe_load(response.content)


def has_example(operation: dict) -> bool:
    bodies = [operation.get("requestBody", {})] + list(operation.get("responses", {}).values())
    for body in bodies:
        for media in body.get("content", {}).values():
            if media.get("examples") or media.get("example"):
                return True
    return False


@pytest.mark.parametrize("path, method", ENDPOINTS)
def test_every_endpoint_is_in_the_schema_with_an_example(schema, path, method):
    operation = schema["paths"][path][method]
    assert operation.get("summary")
    assert has_example(operation), f"{method.upper()} {path} has no example"


def test_the_remember_endpoint_documents_the_idempotency_header(schema):
    parameters = schema["paths"]["/api/v1/memories"]["post"]["parameters"]
    assert any(parameter["name"] == "Idempotency-Key" and parameter["in"] == "header" for parameter in parameters)


def test_the_docs_page_loads_its_script_and_assets_from_this_server(client, db):
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "cdn" not in html.lower() and "unpkg" not in html and "jsdelivr" not in html
    assert "<script>" not in html  # no inline script: the start-up script is a URL of its own
    policy = page["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200 and b"SwaggerUIBundle" in script.content
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert f"/static/drf_spectacular_sidecar/swagger-ui-dist/{asset}" in html
        assert client.get(f"/static/drf_spectacular_sidecar/swagger-ui-dist/{asset}").status_code == 200


def test_the_rest_of_the_site_keeps_the_strict_policy(client, db):
    response = client.get("/healthz")
    assert "'unsafe-inline'" not in response["Content-Security-Policy"]
