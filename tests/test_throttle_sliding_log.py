"""The per-principal throttle keeps DRF's exact sliding log, in Redis, checked in one round trip."""

from __future__ import annotations

import time

import pytest
import redis
import time_machine
from django.conf import settings as django_settings
from django.core.cache import cache
from rest_framework.test import APIClient

from accounts.services import agent_create

pytestmark = pytest.mark.django_db


def bearer_client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def client(org):
    cache.clear()
    yield bearer_client(agent_create(organisation=org, name="busy")[1])
    cache.clear()


def throttle_log() -> tuple[bytes, int]:
    shared = redis.Redis.from_url(django_settings.CACHES["default"]["LOCATION"])
    (key,) = [key for key in shared.keys("*") if b"throttle_" in key]
    return shared.type(key), shared.zcard(key)


def test_the_log_slides_a_refusal_is_not_counted_and_retry_after_names_the_oldest(client, settings):
    # Ten seconds before a minute's edge: the fourth call, 20 s later, falls in the fixed-window gate's next
    # window (lib/api/rate_gate.py), so only this throttle's sliding log can refuse it.
    settings.MEMORY_API_RATE = "3/min"
    start = (int(time.time()) // 60 + 1) * 60 + 50
    with time_machine.travel(start, tick=False) as traveller:
        assert [client.get("/api/v1/places").status_code for _ in range(3)] == [200, 200, 200]
        traveller.shift(20)
        refused = client.get("/api/v1/places")
        assert refused.status_code == 429 and 39 <= int(refused["Retry-After"]) <= 40
        assert throttle_log() == (b"zset", 3)  # the refused request left no entry
        traveller.shift(41)  # the first three left the window
        assert client.get("/api/v1/places").status_code == 200
        assert throttle_log() == (b"zset", 1)


def redis_commands_sent(monkeypatch) -> list:
    """The names of the Redis commands sent from now on (the real server still answers each)."""
    sent: list = []
    original = redis.Redis.execute_command

    def counting(self, *args, **options):
        sent.append(args[0])
        return original(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", counting)
    return sent


def test_the_throttle_costs_one_redis_command_per_request(client, settings, monkeypatch):
    settings.MEMORY_API_RATE = "100/min"
    client.get("/api/v1/places")
    sent = redis_commands_sent(monkeypatch)
    assert client.get("/api/v1/places").status_code == 200
    # The rate gate's fixed window and the sliding log in one script; the throttle answers from its verdict.
    assert sent == ["EVALSHA"], sent


def test_a_signed_in_person_is_throttled_by_the_log_the_throttle_checks_itself(member, settings, monkeypatch):
    settings.MEMORY_API_RATE = "3/min"
    cache.clear()
    client = APIClient()
    client.force_login(member)
    assert client.get("/api/v1/places").status_code == 200  # the server learns the script
    sent = redis_commands_sent(monkeypatch)
    assert [client.get("/api/v1/places").status_code for _ in range(3)] == [200, 200, 429]
    assert sent == ["EVALSHA"] * 3  # no gate for a session: the throttle's own script, each request
    cache.clear()


def test_without_the_gate_a_bearer_call_is_throttled_all_the_same_and_says_why(org, settings, caplog):
    settings.MEMORY_API_RATE = "2/min"
    token = agent_create(organisation=org, name="ungated")[1]
    cache.clear()
    with caplog.at_level("INFO", logger="lib.api.rate_gate"):
        assert bearer_client(token).get("/api/v1/places").status_code == 200
        assert "no rate gate verdict" not in caplog.text  # the positive control: with the gate there is one
        settings.MIDDLEWARE = [path for path in settings.MIDDLEWARE if not path.endswith("TokenRateGateMiddleware")]
        cache.clear()
        ungated = bearer_client(token)  # a client loads the middleware on its first request
        assert [ungated.get("/api/v1/places").status_code for _ in range(3)] == [200, 200, 429]
    assert "no rate gate verdict" in caplog.text
    cache.clear()
