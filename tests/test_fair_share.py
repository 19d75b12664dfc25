"""The fair share: an organisation's requests in flight are capped before Django runs, sized from the worker
count, held to the share while another tenant is active, and a revoked token stops counting against its
organisation's share as its revocation commits."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.core.cache import cache
from django.db import transaction

from accounts.models import AgentToken, hash_token
from accounts.services import agent_create, organisation_create
from accounts.tokens import token_revoke
from lib.api.fair_share import REFUSAL_DETAIL, active_key, all_in_flight_key, in_flight_key, organisation_key
from lib.api.rate_gate import log_key
from lib.metrics import REQUESTS_REFUSED
from tests.wsgi_gate import GateClient
from web.tests.browser import ARTIFACTS, Gunicorn

PLACES = "/api/v1/places"


def redis_client():
    return cache._cache.get_client(write=True)


@pytest.fixture(scope="module")
def servers(request, django_db_setup, django_db_blocker):
    """Two gunicorns, of 2 and 4 workers, with the run command's hooks (config/gunicorn.py), so their workers
    learn their count: started and stopped side by side, each mostly waiting on its workers."""
    from django.db import connection

    with django_db_blocker.unblock():
        settings_dict = dict(connection.settings_dict)
    ARTIFACTS.mkdir(exist_ok=True)
    logs = {workers: ARTIFACTS / f"gunicorn-fair-share-{os.getpid()}-{workers}.log" for workers in (2, 4)}
    hooks = "--config python:config.gunicorn"
    with ThreadPoolExecutor(max_workers=2) as pool:
        starts = {
            workers: pool.submit(Gunicorn, log, settings_dict=settings_dict, workers=workers, GUNICORN_CMD_ARGS=hooks)
            for workers, log in logs.items()
        }
        started = {workers: start.result() for workers, start in starts.items() if start.exception() is None}
        try:
            if len(started) < len(starts):
                raise next(start.exception() for start in starts.values() if start.exception() is not None)
            yield {workers: server.url for workers, server in started.items()}
        finally:
            list(pool.map(Gunicorn.stop, started.values()))
            if not request.session.testsfailed:
                for log in logs.values():
                    log.unlink(missing_ok=True)


@pytest.fixture
def two_workers(servers) -> str:
    return servers[2]


@pytest.fixture
def four_workers(servers) -> str:
    return servers[4]


def tenant(slug: str) -> tuple[object, str]:
    organisation = organisation_create(slug=slug)
    return organisation, agent_create(organisation=organisation, name="agent")[1]


def get(url: str, token: str) -> requests.Response:
    return requests.get(f"{url}{PLACES}", headers={"Authorization": f"Bearer {token}"}, timeout=30)


def fill_share(organisation, count: int, others: int = 0) -> None:
    """`count` requests of the organisation and `others` of other tenants in flight, as the gate records them
    (the real ones are shown below)."""
    key = in_flight_key(organisation.pk)
    redis_client().delete(key, all_in_flight_key())
    if count:
        redis_client().zadd(key, {f"held-{index}": time.time() for index in range(count)})
    if count + others:
        redis_client().zadd(all_in_flight_key(), {f"held-{index}": time.time() for index in range(count + others)})


def mark_active(organisation) -> None:
    """The organisation had a request admitted just now, as the gate records it."""
    redis_client().zadd(active_key(), {in_flight_key(organisation.pk): time.time()})


def wait_for_in_flight(organisation, count: int) -> None:
    deadline = time.monotonic() + 20
    while redis_client().zcard(in_flight_key(organisation.pk)) < count:
        assert time.monotonic() < deadline, "the request never reached the gate"
        time.sleep(0.02)


def test_an_organisation_over_its_share_is_refused_while_another_is_served(two_workers, transactional_db):
    cache.clear()
    busy, busy_token = tenant("busy")
    other_token = tenant("quiet")[1]
    second_token = agent_create(organisation=busy, name="second")[1]
    for token in (busy_token, second_token, other_token):
        assert get(two_workers, token).status_code == 200  # each token's organisation is now known
    # The busy organisation's first request waits in the view (its token's last use is written under a lock
    # held here): one request in flight, its whole share on two workers.
    AgentToken.objects.filter(token_hash=hash_token(busy_token)).update(last_used_at=None)
    answers: dict[str, requests.Response] = {}
    with transaction.atomic():
        AgentToken.objects.select_for_update().get(token_hash=hash_token(busy_token))
        held = threading.Thread(target=lambda: answers.update(held=get(two_workers, busy_token)))
        held.start()
        wait_for_in_flight(busy, 1)
        refused = get(two_workers, second_token)
        served = get(two_workers, other_token)
    held.join(timeout=30)
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
    assert refused.json()["error"] == "throttled"
    assert served.status_code == 200
    assert answers["held"].status_code == 200
    assert redis_client().zcard(in_flight_key(busy.pk)) == 0  # released when answered


def test_the_share_follows_the_worker_count(two_workers, four_workers, transactional_db):
    cache.clear()
    organisation, token = tenant("sized")
    for url, share, slots in ((two_workers, 1, 2), (four_workers, 2, 4)):
        assert get(url, token).status_code == 200
        fill_share(organisation, share - 1, others=slots - share)
        assert get(url, token).status_code == 200, f"below its share of {share}, on a busy server"
        fill_share(organisation, share, others=slots - 1 - share)
        assert get(url, token).status_code == 429, f"at its share of {share}, the one free slot kept for another"
    fill_share(organisation, 0)


def test_a_tenant_alone_goes_past_its_share_but_never_takes_the_last_slot(four_workers, transactional_db):
    cache.clear()
    organisation, token = tenant("alone")
    assert get(four_workers, token).status_code == 200
    fill_share(organisation, 2)  # its share of 2 of the 4 slots, and nobody else in flight
    assert get(four_workers, token).status_code == 200, "a tenant alone is not held to its share"
    fill_share(organisation, 3)
    assert get(four_workers, token).status_code == 429, "the last slot is kept for another tenant"
    fill_share(organisation, 0)


def test_a_revoked_token_stops_counting_against_its_organisation_at_once(two_workers, transactional_db, settings):
    cache.clear()
    organisation, token = tenant("revoking")
    assert get(two_workers, token).status_code == 200
    entry = cache.make_key(organisation_key(hash_token(token)[:32]))
    assert 0 < redis_client().ttl(entry) <= settings.FAIR_SHARE_CACHE_SECONDS  # the stated longest delay
    fill_share(organisation, 1)
    assert get(two_workers, token).status_code == 429  # counted against its organisation's full share
    token_revoke(token=AgentToken.objects.get(token_hash=hash_token(token)))
    assert not redis_client().exists(entry)
    answer = get(two_workers, token)
    assert answer.status_code == 401, "a revoked token counts against a share of its own, then is refused"
    fill_share(organisation, 0)


def test_a_tenant_at_its_share_is_refused_while_another_is_active(four_workers, transactional_db):
    cache.clear()
    organisation, token = tenant("over")
    other, other_token = tenant("waiting")
    for each in (token, other_token, other_token):  # the other's second request is known as its organisation's
        assert get(four_workers, each).status_code == 200
    assert redis_client().zscore(active_key(), in_flight_key(other.pk)) is not None, "a served request is active"
    fill_share(organisation, 2)  # its share of 2 of the 4 slots, two slots free
    mark_active(other)
    refused = get(four_workers, token)
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1", "another tenant is active"
    redis_client().delete(active_key())
    assert get(four_workers, token).status_code == 200, "the same request, with nobody else active"
    fill_share(organisation, 0)


@pytest.mark.django_db
def test_a_refusal_is_answered_before_django_touching_no_database_and_is_counted(settings, django_assert_num_queries):
    cache.clear()
    settings.ORGANISATION_IN_FLIGHT = 1
    organisation, token = tenant("counted")
    client = GateClient(f"Bearer {token}")
    served = client.get(PLACES)
    assert served.status_code == 200 and served.cycles, "the positive control: a served request runs in Django"
    assert redis_client().get(cache.make_key(organisation_key(hash_token(token)[:32]))) is not None, "now known"
    fill_share(organisation, 1)
    before = REQUESTS_REFUSED.labels(reason="org_share")._value.get()
    with django_assert_num_queries(0):
        refused = client.get(PLACES)
    assert refused.status_code == 429 and refused["Retry-After"] == "1"
    assert refused["Content-Type"] == "application/json"
    answer = refused.json()
    assert answer["error"] == "throttled" and answer["fields"] == {} and "share" in answer["detail"]
    assert refused.cycles == [], "refused before a Django request cycle started"
    assert REQUESTS_REFUSED.labels(reason="org_share")._value.get() == before + 1
    fill_share(organisation, 0)
    assert client.get(PLACES).status_code == 200  # the positive control: the same request, with room


def away_from_a_minute_edge() -> None:
    while time.time() % 60 > 50:  # the rates below count per minute: every call in one window
        time.sleep(1)


@pytest.mark.django_db
def test_a_request_refused_for_its_share_still_counts_against_its_token_rate(settings):
    cache.clear()
    settings.ORGANISATION_IN_FLIGHT, settings.MEMORY_API_RATE = 1, "3/min"
    away_from_a_minute_edge()
    organisation, token = tenant("spending")
    client = GateClient(f"Bearer {token}")
    assert client.get(PLACES).status_code == 200
    fill_share(organisation, 1)
    refusals = [client.get(PLACES) for _ in range(2)]
    assert [answer.json()["detail"] for answer in refusals] == [REFUSAL_DETAIL, REFUSAL_DETAIL]
    fill_share(organisation, 0)
    before = REQUESTS_REFUSED.labels(reason="token_rate")._value.get()
    past_rate = client.get(PLACES)
    assert past_rate.status_code == 429 and past_rate.cycles == [], "its fourth call this minute, refused at once"
    assert past_rate.json()["detail"].startswith("Request was throttled.")
    assert 1 <= int(past_rate["Retry-After"]) <= 60
    assert REQUESTS_REFUSED.labels(reason="token_rate")._value.get() == before + 1
    # The positive control: another token of the same organisation, with its share free, is served.
    assert GateClient(f"Bearer {agent_create(organisation=organisation, name='b')[1]}").get(PLACES).status_code == 200


@pytest.mark.django_db
def test_an_address_barred_for_bad_tokens_is_refused_before_django(settings, django_assert_num_queries):
    cache.clear()
    settings.BAD_TOKEN_RATE = "2/min"
    away_from_a_minute_edge()
    guesses = [GateClient(f"Bearer arch_guess{n}").get(PLACES, REMOTE_ADDR="203.0.113.9") for n in range(2)]
    assert [answer.status_code for answer in guesses] == [401, 401], "unknown tokens are found so in Django"
    before = REQUESTS_REFUSED.labels(reason="bad_tokens_from_address")._value.get()
    with django_assert_num_queries(0):
        barred = GateClient("Bearer arch_guess9").get(PLACES, REMOTE_ADDR="203.0.113.9")
    assert barred.status_code == 429 and barred.cycles == [], "barred before a Django request cycle started"
    assert barred.json()["detail"].startswith("Too many unknown or malformed tokens from your address.")
    assert 1 <= int(barred["Retry-After"]) <= 60
    assert REQUESTS_REFUSED.labels(reason="bad_tokens_from_address")._value.get() == before + 1
    # The positive control: another address is not barred.
    assert GateClient("Bearer arch_guess9").get(PLACES, REMOTE_ADDR="198.51.100.7").status_code == 401


@pytest.mark.django_db
def test_the_sliding_log_verdict_counted_by_the_gate_is_the_one_the_throttle_answers(settings):
    cache.clear()
    settings.MEMORY_API_RATE = "3/min"
    away_from_a_minute_edge()
    token = tenant("logged")[1]
    header = f"Bearer {token}"
    # Three calls 20 s ago, in the log: the gate's window this minute has room, the sliding log has none.
    earlier = time.time() - 20
    redis_client().zadd(cache.make_key(log_key(header)), {f"{earlier}:{n}": earlier for n in range(3)})
    # Another tenant's call first, so Redis holds the gate's script, as on any server that has answered once:
    # run alone, the first call's NOSCRIPT and reload would count twice.
    GateClient(f"Bearer {tenant('warmed')[1]}").get(PLACES)
    redis_client().config_resetstat()
    refused = GateClient(header).get(PLACES)
    scripts = redis_client().info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
    assert refused.status_code == 429 and refused.cycles, "the throttle, in the view, refused it"
    assert 38 <= int(refused["Retry-After"]) <= 41, "until the oldest of the log's three leaves the minute"
    assert scripts == 1, "the gate's one script; the throttle read its verdict and ran none of its own"
