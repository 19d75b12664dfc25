"""With DEBUG off (as `make run` serves), every /api/ path answers errors in the API's JSON shape, with or without
a trailing slash, and every other path the site's own 404 and 500 pages."""

from __future__ import annotations

import json

import pytest
from django.test import Client, RequestFactory
from django.urls import get_resolver

from accounts.models import Membership
from accounts.services import user_create
from tests.api_routes import api_endpoints

pytestmark = pytest.mark.django_db


def assert_api_error(answer, status: int) -> dict:
    assert answer.status_code == status, answer.content[:300]
    assert answer["Content-Type"] == "application/json", answer.content[:300]
    body = json.loads(answer.content)
    assert set(body) == {"error", "detail", "fields"}
    return body


@pytest.fixture
def signed_in(org):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user_create(username="mona", organisation=org, role=Membership.Role.OWNER))
    return client


def test_every_endpoint_with_a_trailing_slash_answers_json_naming_the_endpoint(signed_in):
    browser = Client(enforce_csrf_checks=True)
    for endpoint in api_endpoints():
        path = endpoint.path()
        for client in (browser, signed_in):
            answer = getattr(client, endpoint.method)(f"{path}/", content_type="application/json")
            body = assert_api_error(answer, 404)
            assert f"the endpoint is {path}, without the trailing slash" in body["detail"], endpoint


def test_a_session_call_without_its_csrf_token_is_refused_in_the_api_shape(signed_in):
    answer = signed_in.post("/api/v1/recall", {"question": "lunch"}, content_type="application/json")
    body = assert_api_error(answer, 403)
    assert "CSRF" in body["detail"]
    # The positive control: a page's form keeps the site's "form expired" page.
    page = signed_in.post("/me/memories", {})
    assert page.status_code == 403 and b"This form has expired" in page.content


def test_an_unknown_path_is_json_under_the_api_and_the_site_page_elsewhere(client):
    body = assert_api_error(client.get("/api/v1/nothing-here"), 404)
    assert "/api/docs/" in body["detail"]
    page = client.get("/no-such-page")
    assert page.status_code == 404 and b"Nothing here" in page.content
    assert b"URLconf" not in page.content and b"Page not found at" not in page.content


def test_a_server_error_is_json_under_the_api_and_the_site_page_elsewhere():
    handler = get_resolver().resolve_error_handler(500)
    body = assert_api_error(handler(RequestFactory().post("/api/v1/recall")), 500)
    assert body["error"] == "server_error"
    page = handler(RequestFactory().get("/me/memories"))
    assert page.status_code == 500 and b"Something went wrong" in page.content
    assert b"archivist.css" in page.content  # the site's stylesheet, not Django's bare page
