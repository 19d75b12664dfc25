"""Reads from a streaming standby: the app (gunicorn) against a primary and a standby made by `pg_basebackup`.

Which server answered is shown, not assumed: with the standby's replay paused
and a write's position forgotten (`forget_writes`), a read the standby answers
misses that write, and one the primary answers has it.
"""

from __future__ import annotations

import re
import threading
import time
import uuid

import psycopg
import pytest
import requests
from django.db import connection, connections
from django.db.utils import load_backend

from tenancy.standby import WRITTEN_KEY
from tenancy.tests.standby_pair import SUPERUSER, StandbyPair, postgres_binaries
from web.tests.browser import ARTIFACTS, Gunicorn, database_url

DATABASE = "archivist"
PLACE = {"channel": "C-standby", "kind": "public", "people": []}
RETRY_SECONDS = "0.5"
# The module's fixture copies this run's migrated test database, which pytest-django makes for database tests;
# one pytest-xdist worker runs them all, so the pair is made once.
pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("standby")]


def _seed(pair: StandbyPair) -> dict:
    """Two organisations, each with an agent; the first with a member who signs in. Written on the pair's
    primary through the services, with this thread's default connection pointed there meanwhile."""
    from accounts.models import Membership
    from accounts.services import agent_create, organisation_create, user_create

    settings_dict = {
        **connection.settings_dict,
        "NAME": DATABASE,
        "USER": SUPERUSER,
        "PASSWORD": "",
        "HOST": "127.0.0.1",
        "PORT": str(pair.primary.port),
    }
    wrapper = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, alias="default")
    suite = connections["default"]
    connections["default"] = wrapper
    try:
        acme, globex = organisation_create(slug="acme"), organisation_create(slug="globex")
        user_create(username="mona", organisation=acme, role=Membership.Role.MEMBER, password="pw-mona-123")
        return {
            "acme": str(acme.pk),
            "globex": str(globex.pk),
            "acme_token": agent_create(organisation=acme, name="helper")[1],
            "globex_token": agent_create(organisation=globex, name="helper")[1],
        }
    finally:
        connections["default"] = suite
        wrapper.close()


class App:
    """The server and the pair it runs against, with what the tests ask of them."""

    def __init__(self, pair: StandbyPair, server: Gunicorn, seeded: dict):
        self.pair, self.server, self.seeded = pair, server, seeded

    def call(self, method: str, path: str, token: str, **kwargs) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.seeded[token]}"}
        return requests.request(method, f"{self.server.url}/api/v1/{path}", headers=headers, timeout=30, **kwargs)

    def remember(self, body: str, token: str = "acme_token") -> str:
        answer = self.call("POST", "memories", token, json={"body": body, "place": PLACE, "subject_type": "workspace"})
        assert answer.status_code == 201, answer.text
        return answer.json()["id"]

    def get(self, memory_id: str, token: str = "acme_token") -> requests.Response:
        return self.call("GET", f"memories/{memory_id}", token, params={"place": PLACE["channel"]})

    def recall(self, question: str, token: str = "acme_token") -> requests.Response:
        return self.call("POST", "recall", token, json={"question": question, "place": PLACE, "mode": "lexical"})

    def caught_up(self) -> None:
        deadline = time.monotonic() + 20
        while not self.pair.replayed():
            assert time.monotonic() < deadline, "the standby did not catch up within 20 s"
            time.sleep(0.02)

    def replay(self, *, paused: bool) -> None:
        self.pair.standby.execute(f"SELECT pg_wal_replay_{'pause' if paused else 'resume'}()")
        if paused:  # a pause is a request: the standby stops before its next record, and says so
            deadline = time.monotonic() + 20
            while self.pair.standby.execute("SELECT pg_get_wal_replay_pause_state()")[0][0] == "pause requested":
                assert time.monotonic() < deadline, "the standby never paused its replay"
                self.pair.primary.execute("SELECT pg_switch_wal()")  # a record to stop before
                time.sleep(0.02)

    def _written(self, organisation: str):
        from django.core.cache import caches

        return caches["default"]._cache.get_client(write=True), WRITTEN_KEY.format(
            organisation=self.seeded[organisation]
        )

    def forget_writes(self, organisation: str = "acme") -> None:
        client, key = self._written(organisation)
        client.delete(key)

    def wrote_far_ahead(self, organisation: str = "acme") -> None:
        """As if the organisation had just written further than any standby has replayed: the primary answers."""
        client, key = self._written(organisation)
        client.set(key, 2**62, px=60_000)

    def log(self) -> str:
        return self.server.log.read_text(errors="replace")


@pytest.fixture(scope="module")
def app(django_db_setup, django_db_blocker):
    """A primary (a copy of this run's migrated test database) and its standby, and gunicorn reading from it."""
    with django_db_blocker.unblock():
        source = database_url(connection.settings_dict)
        pair = StandbyPair(*postgres_binaries(source))
        server = None
        try:
            pair.start_primary(DATABASE, copy_of=source)
            seeded = _seed(pair)
            pair.start_standby()
            ARTIFACTS.mkdir(exist_ok=True)
            server = Gunicorn(
                ARTIFACTS / f"gunicorn-standby-{uuid.uuid4().hex[:8]}.log",
                settings_dict={"NAME": DATABASE},
                workers=1,
                GUNICORN_CMD_ARGS="--threads 4",  # one process starts sooner; the threads serve concurrent reads
                DATABASE_URL=pair.primary.url(DATABASE),
                DATABASE_REPLICA_URL=pair.standby.url(DATABASE),
                ARCHIVIST_DB_ROLE="archivist_app",
                ARCHIVIST_REPLICA_RETRY_SECONDS=RETRY_SECONDS,
                ARCHIVIST_TOKEN_RATE="100000/min",
            )
            yield App(pair, server, seeded)
        finally:
            if server is not None:
                server.stop()
            pair.close()


@pytest.fixture
def settled(app):
    """Each test starts with the standby replaying and caught up."""
    app.replay(paused=False)
    app.caught_up()
    yield app
    app.replay(paused=False)


def test_a_write_then_an_immediate_read_sees_it_even_when_the_standby_is_behind(settled):
    settled.replay(paused=True)  # the standby cannot have the write: only the primary can answer the reads
    memory_id = settled.remember("The deploy window is Tuesday at noon")
    assert settled.get(memory_id).status_code == 200
    assert memory_id in [row["id"] for row in settled.recall("deploy window Tuesday").json()["results"]]
    listed = settled.call("GET", "memories", "acme_token", params={"place": PLACE["channel"]}).json()["results"]
    assert memory_id in [row["id"] for row in listed]
    assert "(behind)" in settled.log()


def test_reads_are_answered_by_the_standby_once_it_has_the_callers_writes(settled):
    settled.replay(paused=True)
    memory_id = settled.remember("The staging database is called bluebird")
    settled.forget_writes()  # the worst case: the write's position is gone while the standby is behind
    assert settled.get(memory_id).status_code == 404  # the standby answered, without the write
    assert settled.recall("staging database bluebird").json()["results"] == []
    settled.replay(paused=False)
    settled.caught_up()
    assert settled.get(memory_id).status_code == 200  # positive control: the standby has it now


def test_another_organisations_memory_answers_404_through_the_standby(settled):
    memory_id = settled.remember("The on-call phone is in the blue drawer")
    settled.caught_up()
    settled.forget_writes()
    assert settled.get(memory_id, token="globex_token").status_code == 404
    assert settled.recall("on-call phone blue drawer", token="globex_token").json()["results"] == []
    assert settled.get(memory_id).status_code == 200  # positive control: its own organisation reads it


def test_a_standby_read_with_no_tenant_set_returns_nothing(settled):
    settled.remember("Invoices go out on the first working day")
    settled.caught_up()
    with psycopg.connect(settled.pair.standby.url(DATABASE), autocommit=True) as standby:
        assert standby.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
        standby.execute("SET ROLE archivist_app")
        assert standby.execute("SELECT count(*) FROM memories_memory").fetchone()[0] == 0
        with standby.transaction():  # positive control: the tenant set, its rows are there
            standby.execute("SELECT set_config('archivist.organisation_id', %s, true)", [settled.seeded["acme"]])
            assert standby.execute("SELECT count(*) FROM memories_memory").fetchone()[0] > 0


def test_the_same_ranked_results_from_the_standby_and_the_primary(settled):
    for body in ("Lunch is at noon on Fridays", "Friday lunch orders close at ten", "The Friday demo is at four"):
        settled.remember(body)
    settled.caught_up()
    settled.forget_writes()
    from_standby = settled.recall("Friday lunch noon").json()["results"]
    settled.wrote_far_ahead()
    from_primary = settled.recall("Friday lunch noon").json()["results"]
    assert len(from_standby) >= 2
    assert [(row["id"], row["rank"]) for row in from_standby] == [(row["id"], row["rank"]) for row in from_primary]


def test_a_members_page_reads_from_the_standby(settled):
    session = requests.Session()
    login = f"{settled.server.url}/accounts/login/"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', session.get(login, timeout=30).text)
    assert token is not None
    answer = session.post(
        login, {"username": "mona", "password": "pw-mona-123", "csrfmiddlewaretoken": token.group(1)}, timeout=30
    )
    assert answer.status_code == 200 and answer.url.endswith("/me/memories")
    settled.replay(paused=True)
    settled.remember("The printer on floor two needs a new drum")
    settled.forget_writes()
    page = f"{settled.server.url}/me/memories"
    assert "new drum" not in session.get(page, timeout=30).text  # the standby answered
    settled.replay(paused=False)
    settled.caught_up()
    assert "new drum" in session.get(page, timeout=30).text  # positive control


def test_a_standby_stopped_and_started_mid_run_fails_no_request(settled):
    memory_id = settled.remember("The release train leaves every other Wednesday")
    settled.caught_up()
    answers: list[object] = []
    stop = threading.Event()

    def read_on() -> None:
        while not stop.is_set():
            try:
                answers.append(settled.get(memory_id).status_code)
                answers.append(len(settled.recall("release train Wednesday").json()["results"]))
            except Exception as error:  # noqa: BLE001 - a failed request is what the test looks for
                answers.append(repr(error))

    reader = threading.Thread(target=read_on)
    reader.start()
    try:
        time.sleep(0.5)
        settled.pair.standby.stop()
        time.sleep(1)
        settled.pair.standby.start()
        time.sleep(1)
    finally:
        stop.set()
        reader.join(timeout=30)
    assert len(answers) > 10 and set(answers) <= {200, 1}, answers
    assert "(unreachable)" in settled.log() or "(failed)" in settled.log()
    # Back on the standby once it is up: a forgotten write it has not replayed is missing again.
    settled.caught_up()
    time.sleep(float(RETRY_SECONDS))
    settled.replay(paused=True)
    unseen = settled.remember("The standby is back")
    settled.forget_writes()
    assert settled.get(unseen).status_code == 404
