"""A remember's write: the code that writes it against the code it replaced, alternating write by write.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/remember_write.py [--remembers 300] [--facts 1000] [--http]

In its own PostgreSQL and Redis (var/bench-remember-write): one organisation, one agent holding `--facts`
live facts (its cap is the default 2,000, so every write counts them), one private channel. The old code
is `git archive` of the fork point (`git merge-base HEAD --against`): its write modules (the writer, the
services, the turn's writes, idempotency, the remember view) are loaded beside this code's under their own names.

1. In this process, `POST /api/v1/memories` through Django's WSGI handler as `archivist_app` (under
   row-level security, as the web server runs), the remember view switched between the old code and the
   new one request by request: the request to its response and to the server's close (the sends this code
   holds until the close included), and its database statements and Redis commands. Half the requests
   carry an `Idempotency-Key`.
2. With `--http`, two gunicorns (1 worker × 1 thread each): this checkout and the old one, remembers
   alternating between them, half with an `Idempotency-Key` too. Every remember adds a fact: with `--http`,
   keep `--facts` + 4 × `--remembers` + 80 under the cap (2,000).

Figures are printed with the load average; nothing is asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
import types
import uuid
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import harness  # noqa: E402
from request_overhead import PLACE, Counted, base_checkout, pct, profiled  # noqa: E402

# The modules a remember's write runs through, in import order: each old one imports the old ones before it
# (a module the old checkout does not have is left out of the old code).
WRITE_MODULES = [
    "lib.tasks",
    "memories.writer",
    "memories.services",
    "lib.api.idempotency",
    "memories.turns.writes",
    "memories.api.memories",
]

# In process: until the body is read (what a caller waits for), and until the server's close (the sends held
# to it included: what the worker's thread is busy with).
IN_PROCESS_ROWS = ("to the response", "to the close")


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--remembers", type=int, default=300, help="in-process remembers timed, each code")
    parser.add_argument("--facts", type=int, default=1000, help="live facts the agent holds before the first")
    parser.add_argument("--against", default="main", help="the old code: the fork point with this branch")
    parser.add_argument("--http", action="store_true", help="also over HTTP, one gunicorn per code")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top entries of 100 new remembers")
    parser.add_argument("--statements", action="store_true", help="print the statements of one keyed remember each")
    parser.add_argument("--commit", type=int, default=0, help="rounds of the commit's and BEGIN's costs (below)")
    parser.add_argument("--port", type=int, default=8795)
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var" / "bench-remember-write")
    return parser.parse_args()


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def old_modules(checkout: Path) -> dict[str, types.ModuleType]:
    """The old checkout's write modules, each importing the old ones before it, registered under `old.<name>`."""
    current = {name: importlib.import_module(name) for name in WRITE_MODULES}
    loaded = {}
    try:
        for name in WRITE_MODULES:
            path = checkout / (name.replace(".", "/") + ".py")
            if not path.exists():
                continue
            spec = importlib.util.spec_from_file_location(f"old.{name}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = sys.modules[spec.name] = module  # the old modules after it import this one
            spec.loader.exec_module(module)
            loaded[name] = module
    finally:
        sys.modules.update(current)
    return loaded


def seed(facts: int):
    from datetime import timedelta

    from django.utils import timezone

    from accounts.models import Organisation
    from accounts.services import agent_create
    from memories.models import Author, Bucket, Memory, SourceKind
    from memories.places import place_recorded

    organisation = Organisation.objects.create(slug="remember-write", name="Remember write")
    agent, token = agent_create(organisation=organisation, name="bench")
    place_recorded(organisation=organisation, channel=PLACE["channel"], kind=PLACE["kind"], people=[])
    # The agent's facts as its remembers in the channel leave them, only older.
    held = {
        "organisation": organisation,
        "agent": agent,
        "bucket": Bucket.LEARNED,
        "author": Author.MODEL,
        "source_kind": SourceKind.MESSAGE,
        "scope": "channel",
        "scope_ref": PLACE["channel"],
        "expires_at": timezone.now() + timedelta(days=30),
    }
    Memory.objects.bulk_create(
        Memory(body=f"Seeded fact number {index} about the project's weekly schedule", **held) for index in range(facts)
    )
    return token


def remember_body(index: int) -> dict:
    return {"body": f"Fact {index}: the release train leaves on Thursday", "place": PLACE, "subject_type": "workspace"}


@contextmanager
def shown_statements(shown: list | None):
    """Each statement's SQL appended to `shown` (when given) as it runs."""
    from django.db import connection

    if shown is None:
        yield
        return

    def record(execute, sql, params, many, context):
        shown.append(" ".join(sql.split()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield


def in_process(args, token, old):
    """Remembers through the WSGI handler as `archivist_app`, the view's code switched request by request."""
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connections

    import memories.api.memories as views
    from lib import after_response
    from memories.tests.wsgi_requests import served

    connections.close_all()
    settings.DATABASE_ROLE = "archivist_app"
    application = WSGIHandler()
    after_response.connect()  # as config/wsgi.py wires the web server (the old code sends at commit)
    codes = {"new": views.MemoryListApi.post, "old": old["memories.api.memories"].MemoryListApi.post}
    times: dict[str, dict[str, list[float]]] = {row: {"new": [], "old": []} for row in IN_PROCESS_ROWS}
    # (code, keyed): [database statements, Redis commands, requests]
    counted = {(label, keyed): [0, 0, 0] for label in ("new", "old") for keyed in (False, True)}

    def remember(index: int, label: str, keyed: bool, shown: list | None = None):
        views.MemoryListApi.post = codes[label]
        key = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())} if keyed else {}
        keyed_application = (lambda environ, respond: application({**environ, **key}, respond)) if key else application
        with Counted() as counter, shown_statements(shown):
            started = time.perf_counter()
            status, answer, response = served(keyed_application, token, remember_body(index))
            responded = (time.perf_counter() - started) * 1000
            response.close()  # as gunicorn does once it has written the body: the held sends go now
            closed = (time.perf_counter() - started) * 1000
        if not status.startswith("201"):
            raise SystemExit(f"in-process remember answered {status}: {answer}")
        return (responded, closed), counter

    try:
        for index in range(40):  # each code's statements, plans and caches
            remember(index, ("new", "old")[index % 2], keyed=index % 4 >= 2)
        if args.statements:
            for label in ("old", "new"):
                shown: list[str] = []
                remember(900, label, keyed=True, shown=shown)
                print(f"\n{label}: the statements of one remember with an Idempotency-Key")
                print("\n".join(f"  {sql[:160]}" for sql in shown))
        for index in range(2 * args.remembers):
            label = ("new", "old")[index % 2]
            keyed = (index // 2) % 2 == 1
            elapsed, counter = remember(1000 + index, label, keyed=keyed)
            for row, ms in zip(IN_PROCESS_ROWS, elapsed, strict=True):
                times[row][label].append(ms)
            totals = counted[label, keyed]
            totals[0] += counter.database
            totals[1] += counter.redis
            totals[2] += 1
        if args.profile:
            print(profiled(lambda index: remember(5000 + index, "new", keyed=False), 100))
    finally:
        views.MemoryListApi.post = codes["new"]
        after_response.disconnect()
        settings.DATABASE_ROLE = ""
        connections.close_all()
    return times, counted


def over_http(args, data_dir, token):
    """Remembers over HTTP alternating between a gunicorn of this code and one of the old: {label: ms}."""
    import requests

    new = harness.start_gunicorn(port=args.port, data_dir=data_dir, workers=1, threads=1)
    old_data = data_dir / "base-server"
    old_data.mkdir(exist_ok=True)
    old = harness.start_gunicorn(
        port=args.port + 1, data_dir=old_data, workers=1, threads=1, root=base_checkout(data_dir, args.against)
    )
    bases = {"new": f"http://127.0.0.1:{args.port}", "old": f"http://127.0.0.1:{args.port + 1}"}
    sessions = {label: requests.Session() for label in bases}
    for session in sessions.values():
        session.headers["Authorization"] = f"Bearer {token}"
    times: dict[str, list[float]] = {"new": [], "old": []}
    try:
        for index in range(2 * args.remembers + 40):
            label = ("new", "old")[index % 2]
            started = time.perf_counter()
            keyed = {"Idempotency-Key": str(uuid.uuid4())} if (index // 2) % 2 else {}
            response = sessions[label].post(
                f"{bases[label]}/api/v1/memories", json=remember_body(index), headers=keyed, timeout=30
            )
            elapsed = (time.perf_counter() - started) * 1000
            if response.status_code != 201:
                raise SystemExit(f"remember answered {response.status_code}: {response.text[:200]}")
            if index >= 40:  # the first of each warm its server
                times[label].append(elapsed)
    finally:
        for process in (new, old):
            process.terminate()
            process.wait(timeout=30)
    return times


COMMIT_PROBE = "bench_commit_probe"
# Each round runs every row once, in turn: a remember-sized write's COMMIT as served (synchronous_commit on)
# and with the flush skipped (measured only, never served: its share is the WAL flush), a COMMIT with nothing
# to flush (the round trip alone), and a transaction's first statement against the same in autocommit and in a
# pipeline with its BEGIN (psycopg sends BEGIN on its own round trip before a transaction's first statement).
COMMIT_ROWS = (
    "COMMIT of a write, synchronous_commit on",
    "COMMIT of a write, synchronous_commit off",
    "COMMIT of a read-only transaction",
    "SELECT 1 in autocommit (no BEGIN)",
    "SELECT 1 opening a transaction (BEGIN its own round trip)",
    "SELECT 1 opening a transaction, BEGIN in a pipeline with it",
)


def commit_costs(rounds: int) -> dict[str, list[float]]:
    """ms of each of COMMIT_ROWS, `rounds` each, on a scratch table shaped like a memory's words (GIN)."""
    from django.db import connection

    connection.ensure_connection()
    raw = connection.connection
    raw.autocommit = True
    raw.execute(f"CREATE TABLE {COMMIT_PROBE} (id bigserial PRIMARY KEY, body text, words tsvector)")
    raw.execute(f"CREATE INDEX ON {COMMIT_PROBE} USING gin (words)")
    times: dict[str, list[float]] = {row: [] for row in COMMIT_ROWS}
    try:
        for index in range(rounds):
            for row in COMMIT_ROWS:
                times[row].append(_commit_round(raw, row, remember_body(index)["body"]))
    finally:
        raw.rollback()
        raw.autocommit = True
        raw.execute(f"DROP TABLE {COMMIT_PROBE}")
    return times


def _commit_round(raw, row: str, body: str) -> float:
    if row == COMMIT_ROWS[3]:
        started = time.perf_counter()
        raw.execute("SELECT 1")
        return (time.perf_counter() - started) * 1000
    raw.autocommit = False
    started = time.perf_counter()
    if row == COMMIT_ROWS[4]:
        raw.execute("SELECT 1")
    elif row == COMMIT_ROWS[5]:
        with raw.pipeline():
            raw.execute("SELECT 1")
    else:
        if row == COMMIT_ROWS[1]:
            raw.execute("SET LOCAL synchronous_commit = off")
        if row != COMMIT_ROWS[2]:
            raw.execute(f"INSERT INTO {COMMIT_PROBE} (body, words) VALUES (%s, to_tsvector('english', %s))", [body] * 2)
        else:
            raw.execute("SELECT 1")
        started = time.perf_counter()
        raw.commit()
    elapsed = (time.perf_counter() - started) * 1000
    raw.rollback()  # nothing left open after the first-statement rows; a no-op after a commit
    raw.autocommit = True
    return elapsed


def print_commit_costs(times: dict[str, list[float]], load: str) -> None:
    print(f"\nThe commit and BEGIN, every row once a round in turn, as the owner (load average {load})\n")
    print("| ms | p50 | p95 | n |")
    print("| --- | --- | --- | --- |")
    for row, values in times.items():
        print(f"| {row} | {pct(values, 0.5):.3f} | {pct(values, 0.95):.3f} | {len(values)} |")


def print_times(title: str, rows: dict[str, dict[str, list[float]]], load: str) -> None:
    print(f"\n{title} (load average {load})\n")
    print("| remember, ms | old p50 | new p50 | old p95 | new p95 | new/old at p50 | n each |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row, times in rows.items():
        old, new = times["old"], times["new"]
        print(
            f"| {row} | {pct(old, 0.5):.2f} | {pct(new, 0.5):.2f} | {pct(old, 0.95):.2f} | {pct(new, 0.95):.2f} "
            f"| {statistics.median(new) / statistics.median(old):.2f} | {len(new)} |"
        )


def main():
    args = arguments()
    data_dir = args.data_dir.resolve()
    started_load = load_average()
    server, redis = harness.start_services(
        data_dir, "archivist_remember_write", {"ARCHIVIST_EMBEDDER": "none", "ARCHIVIST_TOKEN_RATE": "100000000/min"}
    )
    try:
        token = seed(args.facts)
        old = old_modules(base_checkout(data_dir, args.against))
        times, counted = in_process(args, token, old)
        in_process_load = load_average()
        http = over_http(args, data_dir, token) if args.http else None
        commits = commit_costs(args.commit) if args.commit else None
    finally:
        from django.db import connections

        connections.close_all()
        harness.stop_services(server, redis)
    print(f"\n## A remember's write: {args.facts} live facts held, the agent's cap 2,000, load at start {started_load}")
    alternating = "In process, as `archivist_app`, the view's code alternating request by request"
    print_times(alternating, times, in_process_load)
    print("\nPer remember, the whole request (BEGIN and COMMIT not counted: psycopg sends them itself):\n")
    print("| code | Idempotency-Key | database statements | Redis commands |")
    print("| --- | --- | --- | --- |")
    for (label, keyed), (database, redis_commands, requests_made) in sorted(counted.items()):
        print(
            f"| {label} | {'yes' if keyed else 'no'} | {database / requests_made:.2f} "
            f"| {redis_commands / requests_made:.2f} |"
        )
    if http is not None:
        print_times("Over HTTP, two gunicorns alternating", {"whole call": http}, load_average())
    if commits is not None:
        print_commit_costs(commits, load_average())
    print(json.dumps({"load_at_end": load_average()}))


if __name__ == "__main__":
    main()
