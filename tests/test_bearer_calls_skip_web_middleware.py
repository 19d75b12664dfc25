"""A Bearer API call passes by the session, CSRF, user and messages middleware; pages and session calls keep them."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from accounts.models import Membership
from accounts.services import agent_create, user_create

pytestmark = pytest.mark.django_db

FACT = {
    "body": "The standup is at nine",
    "place": {"channel": "C-general", "kind": "public", "people": []},
    "subject_type": "workspace",
}


@pytest.fixture
def raw_token(org):
    cache.clear()
    yield agent_create(organisation=org, name="helper")[1]
    cache.clear()


@pytest.fixture
def signed_in(org):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user_create(username="mona", organisation=org, role=Membership.Role.OWNER))
    return client


def test_a_bearer_call_loads_no_session_and_sets_no_cookie(signed_in, raw_token):
    answered = signed_in.get("/api/v1/places", HTTP_AUTHORIZATION=f"Bearer {raw_token}")
    assert answered.status_code == 200
    assert not hasattr(answered.wsgi_request, "session") and not hasattr(answered.wsgi_request, "_messages")
    assert not answered.cookies
    # The positive control: the same client's session call runs the session and the user middleware.
    by_session = signed_in.get("/api/v1/places")
    assert by_session.status_code == 200 and by_session.wsgi_request.session.session_key


def test_a_bad_bearer_token_is_refused_even_beside_a_valid_session(signed_in):
    refused = signed_in.get("/api/v1/memories", HTTP_AUTHORIZATION="Bearer arch_not-a-token")
    assert refused.status_code == 401
    assert refused.json()["detail"] == "The token is unknown, revoked or expired."


def test_a_session_write_without_the_csrf_token_is_still_refused(signed_in, raw_token):
    refused = signed_in.post("/api/v1/memories", FACT, content_type="application/json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    # The positive control: a Bearer call needs no CSRF token (it sends no cookie a page could forge).
    written = signed_in.post(
        "/api/v1/memories", FACT, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw_token}"
    )
    assert written.status_code == 201, written.content


def test_a_page_keeps_its_session_when_a_bearer_header_comes_along(signed_in, raw_token):
    page = signed_in.get("/me/memories", HTTP_AUTHORIZATION=f"Bearer {raw_token}")
    assert page.status_code == 200 and page.wsgi_request.user.username == "mona"


def test_a_page_form_posted_without_the_csrf_token_is_refused_by_the_middleware(signed_in, org):
    # The deploy check's CSRF warning is silenced (production settings) because this middleware is
    # Django's under another name: what it must still do is refuse a forged form.
    refused = signed_in.post("/owners/organisation", {"episodes": "off"})
    assert refused.status_code == 403
    org.refresh_from_db()
    assert org.thread_episodes is True
    # The positive control: the same form with its token goes through.
    signed_in.get("/owners/organisation")
    token = signed_in.cookies["csrftoken"].value
    accepted = signed_in.post("/owners/organisation", {"episodes": "off", "csrfmiddlewaretoken": token})
    assert accepted.status_code == 302, accepted.content
    org.refresh_from_db()
    assert org.thread_episodes is False
