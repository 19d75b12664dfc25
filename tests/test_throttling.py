"""Per-token throttling: a shared count in Redis, 429 with Retry-After on every API, and failing open."""

from __future__ import annotations

import time
from datetime import date

import pytest
import redis
from django.conf import settings as django_settings
from django.core.cache import cache
from rest_framework.test import APIClient

from accounts.services import agent_create
from lib.api.rate_gate import gate_key
from lib.metrics import REQUESTS_REFUSED
from tests.wsgi_gate import GateClient

pytestmark = pytest.mark.django_db

CLAIM = {
    "body": "The base rate is 4.75%",
    "slug": "sys:base-rate",
    "entity": "central-bank",
    "transparency": "ledger",
    "evidence_refs": [{"kind": "url", "ref": "https://bank.example/rates"}],
}


@pytest.fixture
def token(org):
    cache.clear()
    yield agent_create(organisation=org, name="busy")[1]
    cache.clear()


def client_for(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture(params=["wsgi gate", "middleware"])
def client_through(request):
    """A client for a token whose calls pass through the WSGI gate gunicorn serves (which counts API calls
    before Django), or through Django alone, as a server without the gate (the middleware counts them)."""
    if request.param == "wsgi gate":
        return lambda token: GateClient(f"Bearer {token}")
    return client_for


def test_the_count_lives_in_redis_so_every_web_worker_shares_it(token, settings, client_through):
    settings.MEMORY_API_RATE = "2/min"
    client = client_through(token)
    assert [client.get("/api/v1/places").status_code for _ in range(3)] == [200, 200, 429]
    shared = redis.Redis.from_url(django_settings.CACHES["default"]["LOCATION"])
    assert any(b"throttle_" in key for key in shared.keys("*"))
    # A second client (another worker would be another process) meets the same count.
    assert client_through(token).get("/api/v1/places").status_code == 429


def test_every_api_is_throttled_with_retry_after_not_only_the_turn_api(token, settings):
    settings.MEMORY_API_RATE = "1/min"
    client = client_for(token)
    assert (
        client.post("/api/v1/system-claims", {**CLAIM, "as_of": date.today().isoformat()}, format="json").status_code
        == 201
    )
    refused = client.post("/api/v1/system-claims", {**CLAIM, "as_of": date.today().isoformat()}, format="json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert refused.json()["error"] == "throttled"


def test_clearing_the_cache_leaves_the_task_queues_alone(token):
    broker = redis.Redis.from_url(django_settings.REDIS_URL)
    queued = broker.lrange("embed", 0, -1)  # tasks earlier tests of this process queued, kept as they were
    broker.rpush("embed", b"a message")
    try:
        cache.clear()
        assert broker.lrange("embed", 0, -1) == [*queued, b"a message"]
    finally:
        broker.lrem("embed", 0, b"a message")  # never left for a worker to take


def test_an_unreachable_cache_lets_requests_through_and_says_so(token, settings, tmp_path, caplog, client_through):
    settings.MEMORY_API_RATE = "1/min"
    settings.CACHES = {
        "default": {
            "BACKEND": "lib.cache.RedisCache",
            "LOCATION": f"unix://{tmp_path / 'no-redis-here.socket'}?db=1",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    client = client_through(token)
    assert [client.get("/api/v1/places").status_code for _ in range(3)] == [200, 200, 200]
    assert "rate limiter unavailable" in caplog.text


def test_a_flooding_token_is_refused_before_any_database_work(
    token, settings, django_assert_num_queries, client_through
):
    settings.MEMORY_API_RATE = "2/min"
    client = client_through(token)
    assert [client.get("/api/v1/places").status_code for _ in range(2)] == [200, 200]
    with django_assert_num_queries(0):
        refused = client.get("/api/v1/places")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert refused.json() == {"error": "throttled", "detail": refused.json()["detail"], "fields": {}}


def test_guessed_tokens_are_counted_too(org, settings, django_assert_num_queries, client_through):
    settings.MEMORY_API_RATE = "2/min"
    cache.clear()
    guesser = client_through("arch_not-a-real-token")
    assert [guesser.get("/api/v1/places").status_code for _ in range(2)] == [401, 401]
    with django_assert_num_queries(0):
        assert guesser.get("/api/v1/places").status_code == 429
    cache.clear()


def test_behind_the_wsgi_gate_a_flood_is_refused_before_django_and_counted_once(token, settings):
    settings.MEMORY_API_RATE = "2/min"
    while time.time() % 60 > 50:  # away from a minute's edge: one window
        time.sleep(1)
    before = REQUESTS_REFUSED.labels(reason="token_rate")._value.get()
    client = GateClient(f"Bearer {token}")
    served = [client.get("/api/v1/places") for _ in range(2)]
    assert [answer.status_code for answer in served] == [200, 200]
    assert all(answer.cycles for answer in served), "the positive control: served requests ran in Django"
    refused = client.get("/api/v1/places")
    assert refused.status_code == 429 and refused.cycles == [], "refused before a Django request cycle started"
    assert refused.json()["detail"].startswith("Request was throttled. Expected available in")
    assert REQUESTS_REFUSED.labels(reason="token_rate")._value.get() == before + 1
    shared = redis.Redis.from_url(django_settings.CACHES["default"]["LOCATION"])
    window = int(time.time() // 60)
    assert int(shared.get(cache.make_key(gate_key(f"Bearer {token}", window))) or 0) == 3, "each call counted once"
