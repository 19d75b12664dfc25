"""The fair share: an organisation's requests in flight are capped before Django runs, sized from the worker
count, held to the share while another tenant is active, and a revoked token stops counting against its
organisation's share as its revocation commits."""

from __future__ import annotations

import io
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.core.cache import cache
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction

from accounts.models import AgentToken, hash_token
from accounts.services import agent_create, organisation_create
from accounts.tokens import token_revoke
from lib.api.fair_share import FairShareGate, active_key, all_in_flight_key, in_flight_key, organisation_key
from lib.metrics import REQUESTS_REFUSED
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


def wsgi_call(application, token: str) -> tuple[str, dict, bytes]:
    """One GET of the places through a WSGI application in this process: its status, headers and body."""
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": PLACES,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "wsgi.input": io.BytesIO(),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
    }
    answered: dict = {}

    def start_response(status, headers, exc_info=None):
        answered.update(status=status, headers=dict(headers))

    # As Django's test client does: the test's transaction holds the connection, which must not be closed.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        body = b"".join(application(environ, start_response))
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    return answered["status"], answered["headers"], body


@pytest.mark.django_db
def test_a_refusal_is_answered_before_django_touching_no_database_and_is_counted(settings, django_assert_num_queries):
    cache.clear()
    settings.ORGANISATION_IN_FLIGHT = 1
    organisation, token = tenant("counted")
    application = FairShareGate(WSGIHandler())
    assert wsgi_call(application, token)[0].startswith("200")
    assert redis_client().get(cache.make_key(organisation_key(hash_token(token)[:32]))) is not None, "now known"
    fill_share(organisation, 1)
    before = REQUESTS_REFUSED.labels(reason="org_share")._value.get()
    cycles: list[object] = []
    request_started.connect(cycles.append)
    try:
        with django_assert_num_queries(0):
            status, headers, body = wsgi_call(application, token)
    finally:
        request_started.disconnect(cycles.append)
    assert status.startswith("429") and headers["Retry-After"] == "1"
    assert headers["Content-Type"] == "application/json"
    answer = json.loads(body)
    assert answer["error"] == "throttled" and answer["fields"] == {} and "share" in answer["detail"]
    assert cycles == [], "refused before a Django request cycle started"
    assert REQUESTS_REFUSED.labels(reason="org_share")._value.get() == before + 1
    fill_share(organisation, 0)
    assert wsgi_call(application, token)[0].startswith("200")  # the positive control: the same request, with room
