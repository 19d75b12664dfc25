"""Requests are read as sent: path ids follow the text rules, a chunked body is refused, a duplicate JSON key is
refused, `Authorization` is exactly `Bearer <token>`, and guessed tokens are limited per client address."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.api_routes import api_endpoints
from tests.wsgi_gate import GateClient

pytestmark = pytest.mark.django_db

HOSTILE_ID = "cand\x0c\x85\x9bidate"  # a form feed and two C1 controls
DM = {"channel": "D-probe", "kind": "dm", "people": ["mona"]}


@pytest.fixture(autouse=True)
def counts_cleared():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def agent_api(agent_with_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_with_token[1]}")
    return client


def send(client, endpoint, path, **extra):
    return getattr(client, endpoint.method)(path, {}, format="json", **extra)


TEXT_PARAMETERS = [
    pytest.param(endpoint, name, id=f"{endpoint} {name}")
    for endpoint in api_endpoints()
    for name, text in endpoint.parameters
    if text
]


@pytest.mark.parametrize(("endpoint", "parameter"), TEXT_PARAMETERS)
def test_a_path_id_with_control_characters_is_refused_naming_it(agent_api, member, endpoint, parameter):
    hostile = send(agent_api, endpoint, endpoint.path(**{parameter: HOSTILE_ID}))
    assert hostile.status_code == 400, hostile.content
    assert list(hostile.json()["fields"]) == [parameter]
    assert "U+000C" in hostile.json()["fields"][parameter][0]
    # The positive control: the same endpoint with a plain id is read (whatever it then answers, not this).
    plain = send(agent_api, endpoint, endpoint.path(subject_type="candidate"))
    assert plain.status_code < 500 and parameter not in plain.json().get("fields", {})


def test_the_candidate_export_with_a_form_feed_in_its_id_is_a_400_not_a_500(agent_api):
    answer = agent_api.get("/api/v1/subjects/candidate/c%0C%C2%85%C2%9F1/memories")
    assert answer.status_code == 400 and "subject_id" in answer.json()["fields"]
    assert agent_api.get("/api/v1/subjects/candidate/c1/memories").status_code == 200


def test_a_chunked_body_is_refused_with_411_before_anything_reads_it(agent_api, org, member):
    body = {"body": "Likes tea", "place": DM}
    chunked = agent_api.post("/api/v1/memories", body, format="json", HTTP_TRANSFER_ENCODING="chunked")
    assert chunked.status_code == 411 and "Content-Length" in chunked.json()["detail"]
    # The positive control: the same body with its length is read.
    assert agent_api.post("/api/v1/memories", body, format="json").status_code == 201


def test_a_json_key_sent_twice_is_refused_naming_it(agent_api, member):
    twice = '{"body": "Likes tea", "place": {"channel": "D-probe", "kind": "dm", "kind": "public", "people": ["mona"]}}'
    refused = agent_api.generic("POST", "/api/v1/memories", twice, content_type="application/json")
    assert refused.status_code == 400 and list(refused.json()["fields"]) == ["kind"]
    once = twice.replace(', "kind": "public"', "")
    assert agent_api.generic("POST", "/api/v1/memories", once, content_type="application/json").status_code == 201


@pytest.mark.parametrize(
    "spelling",
    ["Bearer\t{token}", "Bearer  {token}", "Bearer {token} ", " Bearer {token}", "Bearer {token} extra", "{token}"],
)
def test_authorization_other_than_bearer_one_space_token_is_401_before_the_database(agent_with_token, spelling):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=spelling.format(token=agent_with_token[1]))
    with CaptureQueriesContext(connection) as queries:
        refused = client.get("/api/v1/places")
    assert refused.status_code == 401 and refused.json()["error"] == "unauthenticated"
    assert len(queries) == 0
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_with_token[1]}")
    assert client.get("/api/v1/places").status_code == 200


@pytest.fixture(params=["wsgi gate", "middleware"])
def guess(request):
    """Sends a GET presenting `header` from `address` through the WSGI gate gunicorn serves (which bars an
    address before Django), or through Django alone, as a server without the gate (the middleware bars it)."""

    def send(address: str, header: str = "Bearer arch_guessed", **extra):
        if request.param == "wsgi gate":
            return GateClient(header).get("/api/v1/places", REMOTE_ADDR=address, **extra)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=header)
        return client.get("/api/v1/places", REMOTE_ADDR=address, **extra)

    return send


def in_one_minute_window(seconds_needed: float = 15) -> None:
    """Bad tokens are counted per fixed minute: start where the test's calls all fall inside one window (a test
    that crossed a window's edge would see its count start again)."""
    left = 60 - time.time() % 60
    if left < seconds_needed:
        time.sleep(left + 0.05)


def test_unknown_and_malformed_tokens_are_counted_per_address_then_429_without_the_database(
    agent_with_token, settings, guess
):
    settings.BAD_TOKEN_RATE = "3/min"
    in_one_minute_window()
    good = f"Bearer {agent_with_token[1]}"
    answers = [guess("203.0.113.9", f"Bearer arch_guess{n}").status_code for n in range(2)]
    answers.append(guess("203.0.113.9", "Bearer\tarch_malformed").status_code)
    assert answers == [401, 401, 401]
    with CaptureQueriesContext(connection) as queries:
        barred = guess("203.0.113.9", "Bearer arch_guess9")
    assert barred.status_code == 429 and 1 <= int(barred["Retry-After"]) <= 60
    assert len(queries) == 0
    # The address is barred until its window ends, whatever it presents; another address is not.
    assert guess("203.0.113.9", good).status_code == 429
    assert guess("198.51.100.7", good).status_code == 200


def test_the_forwarded_address_counts_only_behind_a_trusted_proxy(agent_with_token, settings, guess):
    settings.BAD_TOKEN_RATE = "1/min"
    in_one_minute_window()
    good = f"Bearer {agent_with_token[1]}"
    # An untrusted peer's X-Forwarded-For is its own writing: the peer is counted, whatever it claims.
    assert guess("203.0.113.9", HTTP_X_FORWARDED_FOR="192.0.2.1").status_code == 401
    assert guess("203.0.113.9", good, HTTP_X_FORWARDED_FOR="192.0.2.2").status_code == 429
    # Behind a trusted proxy, each forwarded client is counted on its own.
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    assert guess("10.0.0.1", HTTP_X_FORWARDED_FOR="192.0.2.1, 10.0.0.2").status_code == 401
    assert guess("10.0.0.1", good, HTTP_X_FORWARDED_FOR="192.0.2.1").status_code == 429
    assert guess("10.0.0.1", good, HTTP_X_FORWARDED_FOR="192.0.2.3").status_code == 200
