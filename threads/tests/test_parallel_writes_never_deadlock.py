"""Parallel writes in one organisation never deadlock: thread ingest, consolidation, remember and
erasure side by side, against the real server (gunicorn under row-level security) and a real worker.

Consolidation once locked the organisation row with its thread (`select_related` under
`select_for_update`). Every tenant insert key-shares that row, so a remember holding its
channel or agent lock waited on consolidation, which waited on that lock: PostgreSQL
aborted one of them and the request answered 503.
"""

from __future__ import annotations

import http.cookiejar
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from accounts.models import Membership
from accounts.services import agent_create, user_create
from memories.tests import processes
from threads.models import Thread
from web.tests.browser import Gunicorn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROUNDS = 25
PARALLEL_INGESTS = 4


def call(url: str, body: dict, *, token: str | None = None, opener=None, headers=None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with (opener or urllib.request.build_opener()).open(request, timeout=120) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def signed_in(base: str, username: str, password: str):
    """An opener holding the session of an account holder, and the CSRF token its API calls send."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{base}/accounts/login/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token})
    request = urllib.request.Request(f"{base}/accounts/login/", data=form.encode(), method="POST")
    request.add_header("Referer", f"{base}/accounts/login/")
    opener.open(request, timeout=30).read()
    csrf = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    assert any(cookie.name == "sessionid" for cookie in jar), "the owner could not sign in"
    return opener, csrf


def test_parallel_ingest_consolidation_remember_and_erasure_never_answer_5xx(org, owner, member, tmp_path):
    people = [member] + [
        user_create(username=f"p{i}", organisation=org, role=Membership.Role.MEMBER, password=f"pw-p{i}-123")
        for i in range(3)
    ]
    tokens = [agent_create(organisation=org, name=f"helper-{i}")[1] for i in range(PARALLEL_INGESTS + 1)]
    channel = {"channel": "C-busy", "kind": "private", "people": [p.username for p in people]}
    # As many workers as requests in flight, under row-level security as the run command's web process.
    server = Gunicorn(
        tmp_path / "gunicorn.log",
        settings_dict=connection.settings_dict,
        workers=PARALLEL_INGESTS + 3,
        ARCHIVIST_DB_ROLE="archivist_app",
    )
    worker = processes.worker(
        tmp_path / "worker.log", queues="consolidate", concurrency=2, ARCHIVIST_EMBEDDER="none"
    ).start()
    try:
        worker.wait_ready()
        opener, csrf = signed_in(server.url, owner.username, "pw-olive-123")

        def ingest(round_no: int, i: int) -> tuple[str, int, str]:
            author = people[i % len(people)].username
            events = [
                {
                    "id": f"r{round_no}-{i}-{n}",
                    "role": "user",
                    "author": author,
                    "text": text,
                    "time": f"2026-11-30T09:{round_no:02d}:{i * 10 + n:02d}Z",
                    "place": channel,
                }
                for n, text in enumerate(
                    [f"My timezone is UTC+{(round_no + i) % 12}", f"Call me {author.upper()}{round_no}"]
                )
            ]
            # Two threads share each id, so ingests also meet on one thread's lock.
            status, body = call(f"{server.url}/api/v1/threads/T-{i % 2}/events", {"events": events}, token=tokens[i])
            return "ingest", status, body

        def remember(round_no: int) -> tuple[str, int, str]:
            body = {"body": f"Deploys on day {round_no}", "place": channel, "subject_type": "workspace"}
            if round_no % 3 == 0:
                body.update(subject_type="candidate", subject_id=f"cand-{round_no}")
            status, text = call(f"{server.url}/api/v1/memories", body, token=tokens[-1])
            return "remember", status, text

        def erase(round_no: int) -> tuple[str, int, str]:
            if round_no % 5 == 4:
                person = people[round_no % len(people)]
                status, text = call(
                    f"{server.url}/api/v1/subjects/user/{person.pk}/erase",
                    {"reason": "asked"},
                    opener=opener,
                    headers={"X-CSRFToken": csrf, "Referer": f"{server.url}/"},
                )
            else:
                status, text = call(
                    f"{server.url}/api/v1/subjects/candidate/cand-{round_no - round_no % 3}/erase",
                    {"reason": "asked"},
                    token=tokens[-1],
                )
            return "erase", status, text

        outcomes = []
        with ThreadPoolExecutor(max_workers=PARALLEL_INGESTS + 2) as pool:
            for round_no in range(ROUNDS):
                futures = [pool.submit(ingest, round_no, i) for i in range(PARALLEL_INGESTS)]
                futures += [pool.submit(remember, round_no), pool.submit(erase, round_no)]
                outcomes += [future.result() for future in futures]
        # Consolidation catches up with every event, with nothing left failing.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            behind = [t for t in Thread.objects.filter(organisation=org) if t.consolidated_through < t.last_sequence]
            if not behind:
                break
            time.sleep(0.5)
    finally:
        worker.stop()
        server.stop()
    failures = [(kind, status, body[:300]) for kind, status, body in outcomes if status >= 500]
    log = server.log.read_text(errors="replace") + worker.log()
    assert failures == [], f"{len(failures)} of {len(outcomes)} answered 5xx: {failures[:5]}\n{log[-3000:]}"
    # Positive control: every kind of write was really made and accepted.
    assert {kind for kind, status, _ in outcomes if status in (200, 201)} == {"ingest", "remember", "erase"}
    assert "deadlock detected" not in log
    threads = list(Thread.objects.filter(organisation=org))
    assert len(threads) == 2
    assert all(t.consolidated_through == t.last_sequence and not t.consolidation_error for t in threads), log[-3000:]
