"""Per-request work: what an API call costs beyond the work it calls, and where that time goes.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/request_overhead.py [--requests 400] [--profile]

In its own PostgreSQL and Redis (var/bench-overhead): one organisation, one
agent, the turns of one LoCoMo conversation in a private channel (no vectors:
the recall asked is `lexical`, so the work it calls is one short statement).

1. Over HTTP, gunicorn as the run command starts it (`config/gunicorn.py`,
   requests as `archivist_app`): `POST /api/v1/recall`, concurrency 1. The
   per-request work is the whole call minus the server's own `recall()`
   (Server-Timing `recall`): HTTP on loopback, Django's middleware (rate gate,
   session, CSRF, the tenant's transaction), DRF (parsing, authentication,
   throttle, rendering), the place's resolution and upsert.
2. In this process, the same request through Django's WSGI handler as
   `archivist_app`, counted: database round trips and Redis commands per
   request; with `--profile`, cProfile's cumulative top entries.
3. Pairwise in one run: the token's authentication as it was (a separate
   token-hash setting, token read, tenant setting, and the middleware's empty
   tenant first: four round trips) against now (one round trip), alternating
   request by request.

Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import harness  # noqa: E402

LOCOMO = Path(os.environ.get("ARCHIVIST_LOCOMO", ROOT.parent / "shared" / "data" / "locomo-dev.json"))
PLACE = {"channel": "conversation", "kind": "private", "people": []}


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top entries of in-process requests")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var" / "bench-overhead")
    return parser.parse_args()


def pct(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else float("nan")


def seed():
    from accounts.models import Organisation
    from accounts.services import agent_create
    from memories.models import Author, Bucket, SourceKind
    from memories.scopes import Place
    from memories.turns.writes import memory_remember_in_place

    organisation = Organisation.objects.create(slug="overhead", name="Overhead")
    agent, token = agent_create(organisation=organisation, name="bench")
    data = json.loads(LOCOMO.read_text())[0]
    talk = data["conversation"]
    turns = [
        f"{turn['speaker']}: {turn['text']}"
        for key, value in talk.items()
        if key.startswith("session_") and isinstance(value, list)
        for turn in value
    ]
    questions = [item["question"] for item in data["qa"]]
    return organisation, agent, token, turns, questions, (memory_remember_in_place, Place, Author, Bucket, SourceKind)


def remember_all(base, token, turns):
    import requests

    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    for body in turns:
        response = session.post(f"{base}/api/v1/memories", json={"body": body[:2000], "place": PLACE}, timeout=30)
        if response.status_code != 201:
            raise SystemExit(f"remember answered {response.status_code}: {response.text[:200]}")


def over_http(base, token, questions, count):
    import requests

    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    total, server = [], []
    for index in range(count):
        question = questions[index % len(questions)]
        started = time.perf_counter()
        response = session.post(
            f"{base}/api/v1/recall", json={"question": question, "place": PLACE, "mode": "lexical"}, timeout=30
        )
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise SystemExit(f"recall answered {response.status_code}: {response.text[:200]}")
        timing = {
            part.split(";dur=")[0].strip(): float(part.split(";dur=")[1])
            for part in response.headers["Server-Timing"].split(",")
        }
        total.append(elapsed)
        server.append(timing["recall"])
    return total, server


class Counted:
    """Database round trips (Django's execute wrapper) and Redis commands of the requests inside it."""

    def __init__(self):
        self.database = 0
        self.redis = 0

    def __enter__(self):
        from django.db import connection
        from redis.client import Redis

        self._context = connection.execute_wrapper(self._count_database)
        self._context.__enter__()
        self._original = Redis.execute_command
        counter = self

        def execute_command(client, *args, **options):
            counter.redis += 1
            return counter._original(client, *args, **options)

        Redis.execute_command = execute_command
        return self

    def _count_database(self, execute, sql, params, many, context):
        self.database += 1
        return execute(sql, params, many, context)

    def __exit__(self, *exc):
        from redis.client import Redis

        Redis.execute_command = self._original
        self._context.__exit__(*exc)


def wsgi_request(application, token, question):
    """One POST /api/v1/recall through Django's WSGI handler, in this process."""
    body = json.dumps({"question": question, "place": PLACE, "mode": "lexical"}).encode()
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/api/v1/recall",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "HTTP_HOST": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
    }
    status = []
    chunks = application(environ, lambda code, headers, exc_info=None: status.append((code, dict(headers))))
    b"".join(chunks)
    if not status[0][0].startswith("200"):
        raise SystemExit(f"in-process recall answered {status[0][0]}")
    server = float(status[0][1]["Server-Timing"].split("recall;dur=")[1].split(",")[0])
    return server


def old_authenticate(self, request):
    """The Bearer authentication as it was before issue 15: four round trips with the middleware's empty tenant."""
    from django.utils import timezone
    from rest_framework import exceptions
    from rest_framework.authentication import get_authorization_header

    from accounts.auth import AgentPrincipalUser, Principal
    from accounts.models import AgentToken, hash_token
    from tenancy.context import tenant_activate, token_lookup_activate

    parts = get_authorization_header(request).split()
    if not parts or parts[0].lower() != self.keyword:
        return None
    raw = parts[1].decode()
    now = timezone.now()
    token_hash = hash_token(raw)
    tenant_activate(organisation_id="")  # what the middleware set first, for every request
    token_lookup_activate(token_hash=token_hash)
    token = AgentToken.objects.usable(now).select_related("agent", "organisation").filter(token_hash=token_hash).first()
    if token is None:
        raise exceptions.AuthenticationFailed("The token is unknown, revoked or expired.")
    tenant_activate(organisation_id=token.organisation_id)
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        AgentToken.objects.filter(pk=token.pk).update(last_used_at=now)
    request.principal = Principal(organisation=token.organisation, agent=token.agent)
    return AgentPrincipalUser(token.agent), token


def in_process(args, token, questions):
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connections

    from accounts.auth import BearerTokenAuthentication

    # Requests as the web server makes them: as archivist_app, under row-level security.
    connections.close_all()
    settings.DATABASE_ROLE = "archivist_app"
    application = WSGIHandler()
    for question in questions[:20]:
        wsgi_request(application, token, question)
    with Counted() as counted:
        for question in questions[:50]:
            wsgi_request(application, token, question)
    per_request = (counted.database / 50, counted.redis / 50)

    new_authenticate = BearerTokenAuthentication.authenticate
    times = {"before (4 round trips)": [], "now (1 round trip)": []}
    for index in range(args.requests):
        label = "before (4 round trips)" if index % 2 else "now (1 round trip)"
        BearerTokenAuthentication.authenticate = old_authenticate if index % 2 else new_authenticate
        question = questions[index % len(questions)]
        started = time.perf_counter()
        server = wsgi_request(application, token, question)
        times[label].append((time.perf_counter() - started) * 1000 - server)
    BearerTokenAuthentication.authenticate = new_authenticate

    profile_text = ""
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for index in range(200):
            wsgi_request(application, token, questions[index % len(questions)])
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(45)
        profile_text = out.getvalue()
    settings.DATABASE_ROLE = ""
    connections.close_all()
    return per_request, times, profile_text


def main():
    args = arguments()
    data_dir = args.data_dir.resolve()
    server, redis = harness.start_services(
        data_dir, "archivist_overhead", {"ARCHIVIST_EMBEDDER": "none", "ARCHIVIST_TOKEN_RATE": "100000000/min"}
    )
    try:
        organisation, agent, token, turns, questions, _ = seed()
        process = harness.start_gunicorn(port=args.port, data_dir=data_dir, workers=1, threads=1)
        base = f"http://127.0.0.1:{args.port}"
        try:
            remember_all(base, token, turns)
            over_http(base, token, questions, 30)  # each thread's connection, plans and caches
            total, server_ms = over_http(base, token, questions, args.requests)
        finally:
            process.terminate()
            process.wait(timeout=30)
        per_request, times, profile_text = in_process(args, token, questions)
    finally:
        from django.db import connections

        connections.close_all()
        harness.stop_services(server, redis)

    overhead = [t - s for t, s in zip(total, server_ms, strict=True)]
    print()
    print(f"## Per-request work ({len(turns)} facts in one channel, {args.requests} recalls, mode `lexical`, c=1)")
    print()
    print("| over HTTP, ms | p50 | p95 |")
    print("| --- | --- | --- |")
    print(f"| whole call | {pct(total, 0.5):.2f} | {pct(total, 0.95):.2f} |")
    print(f"| the server's `recall()` (Server-Timing) | {pct(server_ms, 0.5):.2f} | {pct(server_ms, 0.95):.2f} |")
    print(f"| **per-request work: the call minus `recall()`** | {pct(overhead, 0.5):.2f} | {pct(overhead, 0.95):.2f} |")
    print()
    print(
        f"In process, per request: {per_request[0]:.1f} database round trips (Django's cursor executes), "
        f"{per_request[1]:.1f} Redis commands."
    )
    print()
    print("| in process, per-request work (the request minus `recall()`), alternating | p50 ms | p95 ms | n |")
    print("| --- | --- | --- | --- |")
    for label, values in times.items():
        print(f"| authentication {label} | {pct(values, 0.5):.2f} | {pct(values, 0.95):.2f} | {len(values)} |")
    before, now = times["before (4 round trips)"], times["now (1 round trip)"]
    print()
    print(f"Saved by one round trip: {statistics.median(before) - statistics.median(now):.2f} ms at p50.")
    print(f"Load average: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores, shared).")
    if profile_text:
        print()
        print("cProfile, 200 in-process requests, cumulative:")
        print(profile_text)


if __name__ == "__main__":
    main()
