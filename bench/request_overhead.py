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
3. Pairwise in one run, in this process: each change of `CHANGED_FUNCTIONS`
   (and the web middleware) against what it replaced, alternating request by
   request.

Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import harness  # noqa: E402
from rest_framework.negotiation import DefaultContentNegotiation  # noqa: E402

from lib.scripts import unbound_script  # noqa: E402

# The shared data folder sits beside the main checkout, so a worktree's is two levels up.
LOCOMO = Path(
    os.environ.get(
        "ARCHIVIST_LOCOMO",
        next(
            (path for path in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if path.is_dir()),
            ROOT.parent / "shared",
        )
        / "data"
        / "locomo-dev.json",
    )
)
PLACE = {"channel": "conversation", "kind": "private", "people": []}


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--against", default="main", help="over HTTP, alternate with the code at the fork point")
    parser.add_argument("--remembers", type=int, default=200, help="in-process remembers timed")
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


def remember_all(bases, token, turns):
    """Every turn remembered over HTTP, one by one, alternating between the servers: {base: call ms}."""
    import requests

    sessions = {base: requests.Session() for base in bases}
    for session in sessions.values():
        session.headers["Authorization"] = f"Bearer {token}"
    times = {base: [] for base in bases}
    for index, body in enumerate(turns):
        base = bases[index % len(bases)]
        started = time.perf_counter()
        response = sessions[base].post(
            f"{base}/api/v1/memories",
            json={"body": body[:2000], "place": PLACE, "subject_type": "workspace"},
            timeout=30,
        )
        times[base].append((time.perf_counter() - started) * 1000)
        if response.status_code != 201:
            raise SystemExit(f"remember answered {response.status_code}: {response.text[:200]}")
    return times


def over_http(bases, token, questions, count):
    """`count` recalls over HTTP, alternating between the servers at `bases`:
    {base: (call ms, recall() ms, the application's ms or None where the server does not say it)}."""
    import requests

    sessions = {base: requests.Session() for base in bases}
    for session in sessions.values():
        session.headers["Authorization"] = f"Bearer {token}"
    times = {base: ([], [], []) for base in bases}
    for index in range(count):
        base = bases[index % len(bases)]
        question = questions[index % len(questions)]
        started = time.perf_counter()
        response = sessions[base].post(
            f"{base}/api/v1/recall", json={"question": question, "place": PLACE, "mode": "lexical"}, timeout=30
        )
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise SystemExit(f"recall answered {response.status_code}: {response.text[:200]}")
        times[base][0].append(elapsed)
        times[base][1].append(recall_timing(response.headers))
        times[base][2].append(app_timing(response.headers))
    return times


def base_checkout(data_dir: Path, against: str) -> Path:
    """The code this branch started from, exported beside the bench's data, sharing the virtualenv."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "merge-base", "HEAD", against], check=True, capture_output=True, text=True
    ).stdout.strip()
    return harness.exported_checkout(data_dir, commit)


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


def wsgi_call(application, token, path, payload, expected):
    """One POST through Django's WSGI handler, in this process; its response headers."""
    body = json.dumps(payload).encode()
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
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
    answer = b"".join(chunks)
    if not status[0][0].startswith(expected):
        raise SystemExit(f"in-process {path} answered {status[0][0]}: {answer[:200]!r}")
    return status[0][1]


def recall_timing(headers) -> float:
    """The server's own `recall()` in ms, from its Server-Timing header."""
    return float(headers["Server-Timing"].split("recall;dur=")[1].split(",")[0])


def app_timing(headers) -> float | None:
    """The application's whole time in ms (Server-Timing `app`, from the outermost middleware), if it says it."""
    timing = headers.get("Server-Timing", "")
    return float(timing.split("app;dur=")[1].split(",")[0]) if "app;dur=" in timing else None


# The hot path switched off for one piece: the module's `hot_path` answers "plain" (`lib.hot_path`).
PLAIN = types.SimpleNamespace(enabled=lambda: False)


def no_read_with_token(view, request):
    """A view's place read off the hot path: nothing sent with the token, the place read on its own."""
    return None


def drf_get_fields(serializer):
    """A serializer's fields off the hot path: DRF's deep copy of the declared ones, prepared, per instance."""
    from rest_framework import serializers

    fields = serializers.Serializer.get_fields(serializer)
    return {name: serializer.prepare_field(name, field) for name, field in fields.items()}


def drf_to_representation(serializer, instance):
    """A row's answer off the hot path: its fields walked by DRF, each value read through `get_attribute`."""
    from rest_framework import serializers

    return serializers.Serializer.to_representation(serializer, instance)


# The rate gate's count alone, as it was: the throttle then checked the sliding log in a script of its own.
_GATE_COUNT_SCRIPT = unbound_script(
    """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count
"""
)


def old_count_in_window(header, now, address=None):
    """The gate's count as it was: one script of its own, and no verdict of the sliding log for the throttle
    (nor the bad-token count of an address, which the new script adds)."""
    from django.conf import settings
    from django.core.cache import cache

    from lib.api.rate_gate import Gate, gate_key, parse_rate

    period = parse_rate(settings.MEMORY_API_RATE)[1]
    key = cache.make_key(gate_key(header, int(now // period)))
    client = cache._cache.get_client(key, write=True)
    return Gate(int(_GATE_COUNT_SCRIPT(keys=[key], args=[period + 1], client=client)), None)


# What changed, each measured against what it replaced: (what, module or class, name, the old value).
CHANGED_FUNCTIONS = [
    (
        "token read: three ORM statements → one round trip made once (`lib.hot_path`)",
        "accounts.auth",
        "hot_path",
        PLAIN,
    ),
    (
        "place read: its own round trip → in the token's (`lib.hot_path`)",
        "memories.api.base.MemoryApi",
        "read_with_token",
        no_read_with_token,
    ),
    (
        "serializers: fields deep-copied per instance → built once per process (`lib.hot_path`)",
        "lib.hot_path.FieldsBuiltOnce",
        "get_fields",
        drf_get_fields,
    ),
    (
        "answers: each row's fields walked by DRF → read by a plan made once per class (`lib.hot_path`)",
        "lib.hot_path.FieldsBuiltOnce",
        "to_representation",
        drf_to_representation,
    ),
    (
        "negotiation: DRF's parse of the Accept header → answered at once for the one renderer (`lib.hot_path`)",
        "lib.api.views.ApiView",
        "content_negotiation_class",
        DefaultContentNegotiation,
    ),
    (
        "rate gate and throttle: a script each → one script, the throttle answering from its verdict",
        "lib.api.rate_gate",
        "count_in_window",
        old_count_in_window,
    ),
]


# The middleware as it was: Django's own, run by Bearer API calls too.
WEB_ONLY = {
    "config.middleware.WebSessionMiddleware": "django.contrib.sessions.middleware.SessionMiddleware",
    "config.middleware.WebCsrfViewMiddleware": "django.middleware.csrf.CsrfViewMiddleware",
    "config.middleware.WebAuthenticationMiddleware": "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.middleware.WebMessageMiddleware": "django.contrib.messages.middleware.MessageMiddleware",
}


def changes(served):
    """(what, where, name, old value) of every change; `served.application` is the WSGI handler requests use."""
    import importlib

    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler
    from django.test import override_settings

    with override_settings(MIDDLEWARE=[WEB_ONLY.get(path, path) for path in settings.MIDDLEWARE]):
        every_middleware = WSGIHandler()

    def where(dotted: str):
        try:
            return importlib.import_module(dotted)
        except ModuleNotFoundError:  # a class: its module, then the attribute
            module, attribute = dotted.rsplit(".", 1)
            return getattr(importlib.import_module(module), attribute)

    found = [(what, where(dotted), name, old) for what, dotted, name, old in CHANGED_FUNCTIONS]
    middleware = "middleware: sessions, CSRF, user, messages → passed by Bearer API calls"
    return [*found, (middleware, served, "application", every_middleware)]


def pairwise(request, count, compared):
    """Each change against what it replaced, alternating request by request: {what: (old ms, new ms)}."""
    figures = {}
    for what, module, name, old in compared:
        new = getattr(module, name)
        old_times, new_times = [], []
        try:
            for index in range(count):
                setattr(module, name, old if index % 2 else new)
                started = time.perf_counter()
                server = request(index)
                (old_times if index % 2 else new_times).append((time.perf_counter() - started) * 1000 - server)
        finally:
            setattr(module, name, new)
        figures[what] = (old_times, new_times)
    return figures


# Where an in-process recall request's time goes, by wall clock (a section includes those nested in it).
SECTIONS = (
    ("rate gate and sliding log (one Redis script)", "lib.api.rate_gate", "count_in_window"),
    ("the transaction opened (health check, no round trip)", "django.db.transaction.Atomic", "__enter__"),
    ("DRF's dispatch (all of the view below)", "rest_framework.views.APIView", "dispatch"),
    ("  authentication: token, tenant, place", "accounts.auth.BearerTokenAuthentication", "authenticate"),
    ("  the body validated (`RecallInputSerializer`)", "lib.api.views.ApiView", "validated"),
    ("  the place resolved from its record", "memories.api.base", "place_for_turn"),
    ("  `recall()` (the work the request calls)", "memories.api.recall", "recall"),
    ("  the answer serialized (`RecallOutputSerializer`)", "rest_framework.serializers.Serializer", "data"),
    ("  the answer rendered as JSON", "rest_framework.renderers.JSONRenderer", "render"),
    ("the transaction committed", "django.db.transaction.Atomic", "__exit__"),
)


def sections(request, count):
    """Each of `SECTIONS` timed inside `count` requests: {label: ms per request}, with the whole request's."""
    import importlib

    spent: dict[str, list[float]] = {}
    patched = []
    for label, dotted, name in SECTIONS:
        try:
            owner = importlib.import_module(dotted)
        except ModuleNotFoundError:  # a class: its module, then the attribute
            module, attribute = dotted.rsplit(".", 1)
            owner = getattr(importlib.import_module(module), attribute)
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        function = original.fget if isinstance(original, property) else original

        def timed(*args, __function=function, __label=label, **kwargs):
            started = time.perf_counter()
            try:
                return __function(*args, **kwargs)
            finally:
                spent[__label][-1] += (time.perf_counter() - started) * 1000

        setattr(owner, name, property(timed) if isinstance(original, property) else timed)
        patched.append((owner, name, original))
    whole = []
    try:
        for index in range(count):
            for label, _, _ in SECTIONS:
                spent.setdefault(label, []).append(0.0)
            started = time.perf_counter()
            request(index)
            whole.append((time.perf_counter() - started) * 1000)
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)
    return {"the whole request (Django's WSGI handler)": whole, **spent}


def profiled(request, count):
    profiler = cProfile.Profile()
    profiler.enable()
    for index in range(count):
        request(index)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(40)
    out.write("\nThe same, by time spent in the function itself:\n")
    stats.sort_stats("tottime").print_stats(25)
    return out.getvalue()


class ServiceTimer:
    """Times `memory_remember` (the write service, not this bench's subject) inside in-process remembers."""

    def __init__(self):
        self.last = 0.0

    def __enter__(self):
        import memories.turns.writes as writes

        self._original = writes.memory_remember

        def timed(*args, **fields):
            started = time.perf_counter()
            try:
                return self._original(*args, **fields)
            finally:
                self.last = (time.perf_counter() - started) * 1000

        writes.memory_remember = timed
        return self

    def __exit__(self, *exc):
        import memories.turns.writes as writes

        writes.memory_remember = self._original


def in_process(args, token, questions, turns):
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connections

    # Requests as the web server makes them: as archivist_app, under row-level security.
    connections.close_all()
    settings.DATABASE_ROLE = "archivist_app"
    served = types.SimpleNamespace(application=WSGIHandler())

    def recall_request(index):
        body = {"question": questions[index % len(questions)], "place": PLACE, "mode": "lexical"}
        return recall_timing(wsgi_call(served.application, token, "/api/v1/recall", body, "200"))

    timer = ServiceTimer()

    def remember_request(index):
        body = {
            "body": f"{turns[index % len(turns)][:1900]} (again {index})",
            "place": PLACE,
            "subject_type": "workspace",
        }
        wsgi_call(served.application, token, "/api/v1/memories", body, "201")
        return timer.last

    result = {}
    with timer:
        for index in range(20):
            recall_request(index)
            remember_request(index)
        for name, request in (("recall", recall_request), ("remember", remember_request)):
            with Counted() as counted:
                for index in range(50):
                    request(index)
            result[f"{name} round trips"] = (counted.database / 50, counted.redis / 50)
        # The old gate leaves the throttle no verdict, which it says at INFO on every request: the old code
        # did not, so that line would be charged to the old side.
        logging.getLogger("lib.api.rate_gate").setLevel(logging.WARNING)
        result["pairwise"] = pairwise(recall_request, args.requests, changes(served))
        result["pairwise remember"] = pairwise(
            lambda index: remember_request(20000 + index), args.requests, changes(served)
        )
        logging.getLogger("lib.api.rate_gate").setLevel(logging.NOTSET)
        remembers = []
        for index in range(args.remembers):
            started = time.perf_counter()
            service = remember_request(1000 + index)
            remembers.append(((time.perf_counter() - started) * 1000, service))
        result["remembers"] = remembers
        result["sections"] = sections(recall_request, args.requests)
        if args.profile:
            result["recall profile"] = profiled(recall_request, 200)
            result["remember profile"] = profiled(lambda index: remember_request(5000 + index), 100)
    settings.DATABASE_ROLE = ""
    connections.close_all()
    return result


def table(rows):
    print("| | p50 ms | p95 ms | n |")
    print("| --- | --- | --- | --- |")
    for label, values in rows:
        print(f"| {label} | {pct(values, 0.5):.2f} | {pct(values, 0.95):.2f} | {len(values)} |")


def report(args, turns, http, result):
    load = [f"{value:.2f}" for value in os.getloadavg()]
    print(f"\n## Per-request work ({len(turns)} facts in one channel, {args.requests} recalls each, `lexical`, c=1)\n")
    print(
        "Over HTTP, two gunicorns (1 worker × 1 thread each, as `archivist_app`), requests alternating: "
        f"this code and the code it started from (`git merge-base HEAD {args.against}`).\n"
    )
    print("| over HTTP, ms | old p50 | new p50 | old p95 | new p95 | n each |")
    print("| --- | --- | --- | --- | --- | --- |")
    rows = {}
    for label in ("old", "new"):
        (total, server_ms, app_ms), remember_ms = http[label]
        said = None not in app_ms  # code from before the `app` timing does not say it
        rows[label] = {
            "recall: whole call": total,
            "recall: the server's `recall()` (Server-Timing)": server_ms,
            "**recall: per-request work (the call minus `recall()`)**": [
                t - s for t, s in zip(total, server_ms, strict=True)
            ],
            "recall: the application's time (Server-Timing `app`)": app_ms if said else [],
            "recall: per-request work inside the application (`app` minus `recall()`)": [
                a - s for a, s in zip(app_ms, server_ms, strict=True)
            ]
            if said
            else [],
            "recall: the HTTP exchange (the call minus `app`)": [t - a for t, a in zip(total, app_ms, strict=True)]
            if said
            else [],
            "**remember: whole call**": remember_ms,
        }

    def cell(values, share):
        return f"{pct(values, share):.2f}" if values else "not said"

    for what, new in rows["new"].items():
        old = rows["old"][what]
        print(f"| {what} | {cell(old, 0.5)} | {cell(new, 0.5)} | {cell(old, 0.95)} | {cell(new, 0.95)} | {len(new)} |")
    print("\nThe HTTP exchange of the same recalls to this code's server, by client, alternating (call minus `app`):\n")
    table(list(args.exchange.items()))
    for name in ("recall", "remember"):
        database, redis = result[f"{name} round trips"]
        print(f"\nIn process, per {name}: {database:.1f} database round trips, {redis:.1f} Redis commands.")
    for name, said in (
        ("pairwise", "a recall (the request minus `recall()`)"),
        ("pairwise remember", "a remember (the request minus `memory_remember()`)"),
    ):
        print(f"\nIn process, per-request work of {said}, old against new, alternating:\n")
        print("| change | old p50 | new p50 | old p95 | new p95 | saved at p50 | n each |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for what, (old, new) in result[name].items():
            print(
                f"| {what} | {pct(old, 0.5):.2f} | {pct(new, 0.5):.2f} | {pct(old, 0.95):.2f} | {pct(new, 0.95):.2f} "
                f"| {statistics.median(old) - statistics.median(new):.2f} | {len(new)} |"
            )
    print("\nIn process, where a recall request's time goes (wall clock; indented: inside DRF's dispatch):\n")
    table(list(result["sections"].items()))
    remembers = result["remembers"]
    print(f"\nIn process, {len(remembers)} remembers:\n")
    table(
        [
            ("remember: the request", [whole for whole, _ in remembers]),
            ("remember: `memory_remember()` (the write service)", [service for _, service in remembers]),
            ("remember: the rest (the request minus the service)", [whole - service for whole, service in remembers]),
        ]
    )
    cores = os.cpu_count()
    print(f"\nLoad average: {args.load_at_start} at the start, {' '.join(load)} at the end ({cores} cores, shared).")
    for name in ("recall profile", "remember profile"):
        if name in result:
            print(f"\ncProfile, in-process {name.split()[0]} requests, cumulative:\n{result[name]}")


def client_libraries(base, token, questions, count):
    """The same recalls to one server through three HTTP clients, alternating, each keeping its connection:
    {client: the call minus the application's time, ms}: what the HTTP exchange costs, and whose it is."""
    import http.client
    from urllib.parse import urlsplit

    import httpx
    import requests

    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    session = requests.Session()
    pooled = httpx.Client(headers=headers)
    address = urlsplit(base)
    plain = http.client.HTTPConnection(address.hostname, address.port)

    def through_requests(body):
        return session.post(f"{base}/api/v1/recall", data=body, headers=headers, timeout=30).headers

    def through_httpx(body):
        return pooled.post(f"{base}/api/v1/recall", content=body, timeout=30).headers

    def through_http_client(body):
        plain.request("POST", "/api/v1/recall", body, headers)
        response = plain.getresponse()
        response.read()
        return {"Server-Timing": response.getheader("Server-Timing", "")}

    clients = {
        "requests (the benchmarks' client)": through_requests,
        "httpx (the clients' transport)": through_httpx,
        "http.client (the standard library)": through_http_client,
    }
    exchange: dict[str, list[float]] = {name: [] for name in clients}
    for index in range(count * len(clients)):
        name = list(clients)[index % len(clients)]
        body = json.dumps({"question": questions[index % len(questions)], "place": PLACE, "mode": "lexical"})
        started = time.perf_counter()
        answer = clients[name](body)
        elapsed = (time.perf_counter() - started) * 1000
        app = app_timing(answer)
        if app is not None and index >= len(clients) * 10:  # each client's first calls open its connection
            exchange[name].append(elapsed - app)
    pooled.close()
    plain.close()
    return exchange


def served_over_http(args, data_dir, token, turns, questions):
    """This code and the code it started from, one gunicorn each, requests alternating between them."""
    new = harness.start_gunicorn(port=args.port, data_dir=data_dir, workers=1, threads=1)
    old_data = data_dir / "base-server"
    old_data.mkdir(exist_ok=True)
    old = harness.start_gunicorn(
        port=args.port + 1, data_dir=old_data, workers=1, threads=1, root=base_checkout(data_dir, args.against)
    )
    bases = [f"http://127.0.0.1:{args.port}", f"http://127.0.0.1:{args.port + 1}"]
    try:
        remembered = remember_all(bases, token, turns)
        over_http(bases, token, questions, 60)  # each server's connection, plans and caches
        recalled = over_http(bases, token, questions, 2 * args.requests)
        args.exchange = client_libraries(bases[0], token, questions, args.requests // 2)
    finally:
        for process in (new, old):
            process.terminate()
            process.wait(timeout=30)
    # The first remembers of each server warm it.
    return {label: (recalled[base], remembered[base][15:]) for label, base in zip(("new", "old"), bases, strict=True)}


def main():
    args = arguments()
    args.load_at_start = " ".join(f"{value:.2f}" for value in os.getloadavg())
    data_dir = args.data_dir.resolve()
    server, redis = harness.start_services(
        data_dir,
        "archivist_overhead",
        {
            "ARCHIVIST_EMBEDDER": "none",
            "ARCHIVIST_TOKEN_RATE": "100000000/min",
            "MEMORY_MAX_LIVE_FACTS_PER_AGENT": "100000",
        },
    )
    try:
        organisation, agent, token, turns, questions, _ = seed()
        http = served_over_http(args, data_dir, token, turns, questions)
        result = in_process(args, token, questions, turns)
    finally:
        from django.db import connections

        connections.close_all()
        harness.stop_services(server, redis)
    report(args, turns, http, result)


if __name__ == "__main__":
    main()
