"""The token rate gate counts in one Redis script: exact and atomic across workers, its key expiring."""

from __future__ import annotations

import threading
import time

import pytest
import redis
from django.conf import settings as django_settings
from django.core.cache import cache
from django.http import HttpResponse
from django.test import RequestFactory

from lib.api.rate_gate import TokenRateGateMiddleware, count_in_window, gate_key, log_key

THREADS = 8
REQUESTS_EACH = 25


@pytest.fixture(autouse=True)
def clean_cache():
    cache.clear()
    yield
    cache.clear()


def shared_redis() -> redis.Redis:
    return redis.Redis.from_url(django_settings.CACHES["default"]["LOCATION"])


def in_threads(work) -> list:
    """`work()` REQUESTS_EACH times in each of THREADS threads, started together; every answer."""
    answers: list = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def run():
        start.wait()
        mine = [work() for _ in range(REQUESTS_EACH)]
        with lock:
            answers.extend(mine)

    threads = [threading.Thread(target=run) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def counted(header: str) -> int:
    """One request presenting `header` counted now: its window's count."""
    return count_in_window(header, time.time())[0]


def test_concurrent_counts_are_exact_each_request_one_number_and_one_log_entry(settings):
    settings.MEMORY_API_RATE = "1000/min"
    while time.time() % 60 > 50:  # away from a minute's edge: one window
        time.sleep(1)
    header = "Bearer arch_concurrent"
    counts = in_threads(lambda: counted(header))
    # Atomic: no two requests were given the same count, and none was lost, in the window or the log.
    assert sorted(counts) == list(range(1, THREADS * REQUESTS_EACH + 1))
    assert int(shared_redis().get(cache.make_key(gate_key(header, int(time.time() // 60))))) == THREADS * REQUESTS_EACH
    assert shared_redis().zcard(cache.make_key(log_key(header))) == THREADS * REQUESTS_EACH


def test_the_log_refuses_what_the_next_window_lets_through_and_a_refusal_leaves_no_entry(settings):
    settings.MEMORY_API_RATE = "3/min"
    header, now = "Bearer arch_verdict", (int(time.time()) // 60) * 60 + 50.0
    first = [count_in_window(header, now) for _ in range(3)]
    assert [(count, verdict.allowed) for count, verdict, _ in first] == [(1, True), (2, True), (3, True)]
    # 20 s later: the gate's next window counts it first, but the sliding log still holds the three.
    count, verdict, _ = count_in_window(header, now + 20)
    assert (count, verdict.allowed, verdict.oldest) == (1, False, now)
    assert shared_redis().zcard(cache.make_key(log_key(header))) == 3
    # Past the gate's own rate, the gate refuses and the log is not consulted.
    assert [count_in_window(header, now + 21)[0] for _ in range(3)][-1] == 4
    assert shared_redis().zcard(cache.make_key(log_key(header))) == 3


def test_concurrent_requests_past_the_rate_are_refused_exactly(settings):
    settings.MEMORY_API_RATE = "37/min"
    gate = TokenRateGateMiddleware(lambda request: HttpResponse("passed"))
    factory = RequestFactory()
    # Away from a minute's edge, so every request falls in one window.
    while time.time() % 60 > 50:
        time.sleep(1)
    statuses = in_threads(lambda: gate(factory.get("/api/v1/memories", HTTP_AUTHORIZATION="Bearer arch_flood")))
    codes = [response.status_code for response in statuses]
    assert codes.count(200) == 37 and codes.count(429) == THREADS * REQUESTS_EACH - 37
    refused = next(response for response in statuses if response.status_code == 429)
    assert 1 <= int(refused["Retry-After"]) <= 60


def test_the_count_expires_with_its_window_and_the_next_window_starts_again():
    window = int(time.time() // 60)
    header = "Bearer arch_window"
    assert [count_in_window(header, window * 60 + 1)[0] for _ in range(3)] == [1, 2, 3]
    # The script sets the expiry with the first count only: a window's key never outlives it by more than 1 s.
    assert 59 <= shared_redis().ttl(cache.make_key(gate_key(header, window))) <= 61
    assert count_in_window(header, (window + 1) * 60 + 1)[0] == 1


def commands_received(work) -> dict[str, int]:
    """The commands the Redis server itself counted while `work()` ran (its command statistics)."""
    server = shared_redis()
    server.config_resetstat()
    work()
    stats = server.info("commandstats")
    return {name.removeprefix("cmdstat_"): stat["calls"] for name, stat in stats.items() if "config" not in name}


def test_the_gate_is_one_redis_command_and_other_headers_send_none():
    gate = TokenRateGateMiddleware(lambda request: HttpResponse("passed"))
    factory = RequestFactory()
    gate(factory.get("/", HTTP_AUTHORIZATION="Bearer arch_warm"))  # the server learns the script once
    # Not a Bearer token: nothing counted.
    assert commands_received(lambda: gate(factory.get("/", HTTP_AUTHORIZATION="Basic bW9uYTpzZWNyZXQ="))) == {}
    # The positive control: a token is counted by one script, whose commands run inside the server: the
    # address's bad-token count, the window's INCR and EXPIRE, the sliding log's trim, count, add and expiry.
    counted = commands_received(lambda: gate(factory.get("/", HTTP_AUTHORIZATION="Bearer arch_once")))
    inside = {"get": 1, "incr": 1, "expire": 1, "zremrangebyscore": 1, "zcard": 1, "zadd": 1, "pexpire": 1}
    assert counted == {"evalsha": 1, **inside}


def test_a_flushed_script_cache_is_loaded_again_and_still_counts_once():
    now = (int(time.time()) // 60) * 60 + 1.0
    assert count_in_window("Bearer arch_flushed", now)[0] == 1
    shared_redis().script_flush()
    assert count_in_window("Bearer arch_flushed", now + 1)[0] == 2
