"""Load: 50 clients for 60 s against gunicorn on loopback, recall, render and remember across 100 tenants.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/load.py            # about 3 minutes, prints figures

1. Seeds 100 organisations (three people and one agent each, 20 memories
   each) in its own PostgreSQL and Redis (var/bench-load), then starts gunicorn
   as the run command does: requests as `archivist_app`, under row-level security.
2. Mixed load: every client loops for `--seconds`, each call for a random
   tenant: recall 50 %, render 25 %, remember 25 %. Throughput, p50/p95/p99
   per operation, and every status that is not the expected one.
3. Counts the rows: every 201 answered must be in the database.
4. One tenant floods: first the other tenants' p95 with `--quiet-clients`
   alone, then again while `--flood-clients` send as fast as they can with
   one tenant's token, ignoring Retry-After. Reports the ratio, and the flood's
   429s with their Retry-After.

The load generator runs on the same two cores as the server, so absolute
figures are a floor for this machine, not a capacity plan. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness import rows_present, start_gunicorn, start_services, stop_services  # noqa: E402 - after the path is set

DATABASE = "archivist_load"
OPERATIONS = (("recall", 0.5), ("render", 0.25), ("remember", 0.25))
EXPECTED = {"recall": 200, "render": 200, "remember": 201}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--memories", type=int, default=20, help="seeded per tenant")
    parser.add_argument("--quiet-clients", type=int, default=10, help="other tenants' clients in the flood test")
    parser.add_argument("--flood-clients", type=int, default=40, help="clients sharing the flooding tenant's token")
    parser.add_argument("--flood-seconds", type=float, default=20)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    # The product's 1,200 a minute, counted per second: a flood of 20 s never reaches 1,200.
    parser.add_argument("--rate", default="20/s", help="per-token rate (ARCHIVIST_TOKEN_RATE)")
    parser.add_argument("--embedder", default="none", choices=("none", "local"))
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench-load"))
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def step(message: str) -> None:
    print(f"[load] {message}", flush=True)


def seed(args) -> list[dict]:
    """Tenants with people, an agent token and memories, written through the services."""
    from accounts.models import Membership
    from accounts.services import agent_create, organisation_create, user_create
    from memories.places import place_recorded
    from memories.turns.writes import RememberRequest, memory_remember_in_place

    rng = random.Random(args.seed)
    tenants = []
    for index in range(args.tenants):
        organisation = organisation_create(slug=f"load-{index}")
        people = [
            user_create(username=f"l{index}-p{n}", organisation=organisation, role=Membership.Role.MEMBER).username
            for n in range(3)
        ]
        agent, token = agent_create(organisation=organisation, name="agent")
        places = [{"channel": f"D-{index}-{name}", "kind": "dm", "people": [name]} for name in people]
        places.append({"channel": f"C-{index}", "kind": "public", "people": people[:1]})
        for n in range(args.memories):
            place = rng.choice(places)
            resolved = place_recorded(organisation=organisation, **place)
            memory_remember_in_place(
                RememberRequest(
                    body=f"Seeded fact {n} for tenant {index}: prefers {rng.choice(['tea', 'coffee', 'water'])}",
                    subject_type="workspace",
                ),
                organisation=organisation,
                resolved=resolved,
                writer=agent,
            )
        tenants.append({"index": index, "token": token, "places": places})
    return tenants


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls: list[tuple[str, int, float, float]] = []  # (operation, status, seconds, finished at)
        self.created: list[str] = []
        self.retry_after: list[str] = []

    def add(self, operation: str, status: int, seconds: float, response) -> None:
        with self.lock:
            self.calls.append((operation, status, seconds, time.monotonic()))
            if status == 201:
                self.created.append(response.json()["id"])
            if status == 429:
                self.retry_after.append(response.headers.get("Retry-After", ""))


def call(session, base: str, tenant: dict, operation: str, rng: random.Random, counter):
    place = rng.choice(tenant["places"])
    headers = {"Authorization": f"Bearer {tenant['token']}"}
    if operation == "recall":
        payload = {"place": place, "question": rng.choice(["tea", "what does she prefer", "coffee", ""])}
        return session.post(f"{base}/api/v1/recall", json=payload, headers=headers, timeout=30)
    if operation == "render":
        payload = {"place": place, "turn_id": f"turn-{next(counter)}", "question": "preferences"}
        return session.post(f"{base}/api/v1/render", json=payload, headers=headers, timeout=30)
    payload = {"place": place, "body": f"Load fact {next(counter)}: likes {rng.choice(['jazz', 'rain', 'maps'])}"}
    return session.post(f"{base}/api/v1/memories", json=payload, headers=headers, timeout=30)


def drive(
    args,
    base: str,
    pick_tenant,
    clients: int,
    seconds: float,
    recorder: Recorder,
    seed: int,
    ops=OPERATIONS,
    polite=False,
):
    import itertools

    import requests

    counter = itertools.count(seed * 1_000_000)
    lock = threading.Lock()

    def next_id():
        with lock:
            return next(counter)

    class Ids:
        def __next__(self):
            return next_id()

    stop_at = time.monotonic() + seconds
    names = [name for name, _ in ops]
    weights = [weight for _, weight in ops]

    def client(number: int):
        rng = random.Random(seed * 1000 + number)
        session = requests.Session()
        while time.monotonic() < stop_at:
            operation = rng.choices(names, weights)[0]
            tenant = pick_tenant(rng)
            started = time.perf_counter()
            try:
                response = call(session, base, tenant, operation, rng, Ids())
                recorder.add(operation, response.status_code, time.perf_counter() - started, response)
                if polite and response.status_code == 429:
                    time.sleep(
                        min(float(response.headers.get("Retry-After", "1")), max(0.0, stop_at - time.monotonic()))
                    )
            except requests.RequestException:
                recorder.add(operation, 0, time.perf_counter() - started, None)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def report(title: str, calls, seconds: float) -> dict:
    print(f"\n{title}")
    print(f"  {'operation':<10} {'calls':>7} {'per s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  other statuses")
    out = {}
    by_op = defaultdict(list)
    for operation, status, latency, _ in calls:
        by_op[operation].append((status, latency))
    for operation in [name for name, _ in OPERATIONS if name in by_op] + ["all"]:
        rows = [row for rows in by_op.values() for row in rows] if operation == "all" else by_op[operation]
        latencies = [latency * 1000 for _, latency in rows]
        if operation == "all":
            others = Counter(status for status, _ in rows if status not in (200, 201))
        else:
            others = Counter(status for status, _ in rows if status != EXPECTED[operation])
        stats = {
            "calls": len(rows),
            "rate": len(rows) / seconds,
            "p50": percentile(latencies, 0.5),
            "p95": percentile(latencies, 0.95),
            "p99": percentile(latencies, 0.99),
        }
        out[operation] = stats
        print(
            f"  {operation:<10} {stats['calls']:>7} {stats['rate']:>7.1f} {stats['p50']:>8.1f} {stats['p95']:>8.1f}"
            f" {stats['p99']:>8.1f}  {dict(others) or '-'}"
        )
    return out


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of a process and its children (gunicorn's workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(child) for child in children.read_text().split()]
    for process in pids:
        fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def main() -> None:
    args = arguments()
    data_dir = Path(args.data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
    step(f"services and schema in {data_dir}")
    server, redis = start_services(
        data_dir, DATABASE, {"ARCHIVIST_TOKEN_RATE": args.rate, "ARCHIVIST_EMBEDDER": args.embedder}
    )
    gunicorn = None
    try:
        step(f"seeding {args.tenants} tenants x {args.memories} memories")
        started = time.monotonic()
        tenants = seed(args)
        step(f"seeded in {time.monotonic() - started:.0f} s; starting gunicorn ({args.workers} x {args.threads})")
        gunicorn = start_gunicorn(port=args.port, data_dir=data_dir, workers=args.workers, threads=args.threads)
        base = f"http://127.0.0.1:{args.port}"

        step(f"mixed load: {args.clients} clients x {args.seconds:.0f} s across {args.tenants} tenants")
        mixed = Recorder()
        postgres = server.get_pid()
        server_cpu, database_cpu, client_cpu = cpu_seconds(gunicorn.pid), cpu_seconds(postgres), own_cpu_seconds()
        drive(args, base, lambda rng: rng.choice(tenants), args.clients, args.seconds, mixed, seed=1)
        print(
            f"\n  CPU over the run: gunicorn {cpu_seconds(gunicorn.pid) - server_cpu:.0f} s,"
            f" PostgreSQL {cpu_seconds(postgres) - database_cpu:.0f} s,"
            f" load generator {own_cpu_seconds() - client_cpu:.0f} s, of {2 * args.seconds:.0f} s on two cores"
        )
        figures = report(
            f"Mixed load, {args.clients} clients, {args.seconds:.0f} s, rate {args.rate} per token",
            mixed.calls,
            args.seconds,
        )
        present = rows_present(mixed.created)
        print(f"\n  201s answered: {len(mixed.created)}; of them in the database afterwards: {present}")

        quiet = tenants[1:]
        step(f"flood: baseline with {args.quiet_clients} clients of the other tenants")
        baseline = Recorder()
        drive(args, base, lambda rng: rng.choice(quiet), args.quiet_clients, args.flood_seconds, baseline, seed=2)
        base_figures = report("Other tenants, alone", baseline.calls, args.flood_seconds)

        ratios = {}
        for polite in (False, True):
            manner = "honour Retry-After" if polite else "ignore Retry-After"
            step(f"flood: the same, while {args.flood_clients} clients flood tenant 0 and {manner}")
            flooded, flood = Recorder(), Recorder()
            flooder = threading.Thread(
                target=drive,
                args=(args, base, lambda rng: tenants[0], args.flood_clients, args.flood_seconds, flood),
                kwargs={"seed": 3 + 2 * polite, "ops": (("recall", 1.0),), "polite": polite},
            )
            server_cpu, client_cpu = cpu_seconds(gunicorn.pid), own_cpu_seconds()
            flooder.start()
            drive(
                args,
                base,
                lambda rng: rng.choice(quiet),
                args.quiet_clients,
                args.flood_seconds,
                flooded,
                seed=4 + 2 * polite,
            )
            flooder.join()
            print(
                f"\n  CPU during the flood: server {cpu_seconds(gunicorn.pid) - server_cpu:.0f} s,"
                f" load generator {own_cpu_seconds() - client_cpu:.0f} s"
            )
            flooded_figures = report(
                f"Other tenants, while the flood clients {manner}", flooded.calls, args.flood_seconds
            )
            report(f"The flooding tenant ({manner})", flood.calls, args.flood_seconds)
            statuses = Counter(status for _, status, _, _ in flood.calls)
            with_header = sum(1 for value in flood.retry_after if value.isdigit() and int(value) > 0)
            ratios[manner] = flooded_figures["all"]["p95"] / base_figures["all"]["p95"]
            print(
                f"\n  flood: {statuses.get(429, 0)} answered 429, {with_header} of them with a Retry-After;"
                f" {statuses.get(200, 0)} served. Other tenants' p95: {base_figures['all']['p95']:.1f} ms alone,"
                f" {flooded_figures['all']['p95']:.1f} ms during the flood ({ratios[manner]:.2f}x)"
            )
        ratio = ", ".join(f"{value:.2f}x when the flood clients {manner}" for manner, value in ratios.items())
        print(
            f"\n  summary: {figures['all']['rate']:.0f} calls/s, p50 {figures['all']['p50']:.0f} ms,"
            f" p95 {figures['all']['p95']:.0f} ms, p99 {figures['all']['p99']:.0f} ms;"
            f" {sum(1 for c in mixed.calls if c[1] not in (200, 201))} errors;"
            f" rows {present}/{len(mixed.created)}; others' p95 under a flood: {ratio}"
        )
    finally:
        if gunicorn is not None:
            gunicorn.terminate()
            gunicorn.wait(timeout=30)
        stop_services(server, redis)


if __name__ == "__main__":
    main()
