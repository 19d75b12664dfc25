"""The live server for the integrations' tests: the browser harness's gunicorn (`web.tests.browser`) on this
run's test database, and an organisation with a person and an agent token committed where it can see them.

The packages under clients/ never import Django; only their tests set up rows through the services.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from django.core.cache import cache

from accounts.models import Membership
from accounts.services import agent_create, organisation_create, user_create


@dataclass
class LiveApi:
    url: str
    token: str
    organisation: object
    agent: object
    person: object
    other_person: object
    dm: dict
    team: dict
    general: dict

    def throttle_token(self, *, seconds_left: float = 1.0) -> None:
        """Fill this token's shared request log (Redis, as every web worker reads it) so the real server
        answers 429 until `seconds_left` have passed."""
        from django.conf import settings

        from lib.api.rate_gate import log_key

        count = int(settings.MEMORY_API_RATE.split("/")[0])
        oldest = time.time() - 60 + seconds_left
        # A Bearer call's sliding log is a Redis sorted set scored by time, keyed by the presented token's hash
        # (lib/api/rate_gate.py), which the rate gate's script checks before the throttle answers.
        key = cache.make_and_validate_key(log_key(f"Bearer {self.token}"))
        client = cache._cache.get_client(key, write=True)
        client.delete(key)
        client.zadd(key, {f"{oldest!r}:{index}": oldest for index in range(count)})
        client.pexpire(key, 60_000)


@pytest.fixture
def live_api(gunicorn_server, transactional_db) -> LiveApi:
    cache.clear()
    organisation = organisation_create(slug="acme-live", name="Acme Live")
    person = user_create(username="mona", organisation=organisation, role=Membership.Role.MEMBER, password="pw-mona-1")
    other = user_create(username="max", organisation=organisation, role=Membership.Role.MEMBER, password="pw-max-1")
    agent, token = agent_create(organisation=organisation, name="helper")
    yield LiveApi(
        url=gunicorn_server,
        token=token,
        organisation=organisation,
        agent=agent,
        person=person,
        other_person=other,
        dm={"channel": "D-mona", "kind": "dm", "people": ["mona"]},
        team={"channel": "G-team", "kind": "private", "people": ["mona", "max"]},
        general={"channel": "C-general", "kind": "public", "people": ["mona"]},
    )
    cache.clear()


@pytest.fixture
def archivist_env(live_api, monkeypatch) -> LiveApi:
    """ARCHIVIST_URL and ARCHIVIST_TOKEN set to the live server and its agent token."""
    monkeypatch.setenv("ARCHIVIST_URL", live_api.url)
    monkeypatch.setenv("ARCHIVIST_TOKEN", live_api.token)
    return live_api


@pytest.fixture
def run_async():
    """Run a coroutine to the end on a fresh event loop in a thread of its own.

    The browser tests' Playwright keeps an event loop running in the main thread for the whole session,
    and `asyncio.run` refuses to start inside a running loop.
    """

    def run(coroutine):
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coroutine).result()

    return run
