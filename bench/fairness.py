"""Fairness: what one tenant's flood costs the others, this code against the code before the fair share.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/fairness.py            # about 4 minutes, prints a table

In its own PostgreSQL and Redis (var/bench-fairness): twelve organisations,
each with three people, one agent and 20 memories (`bench/load.py`'s seed). Two gunicorns as the run command
starts it (3 sync workers, requests as `archivist_app`, `config/gunicorn.py`), one serving
the code before the fair share (the parent of the commit that added
`lib/api/fair_share.py`, or `--against`) and one this code, both up and measured
in turns phase by phase, each with its own default token rate (`ARCHIVIST_TOKEN_RATE` unset).

Against each server:
1. Capacity: six closed-loop clients, one for each of six other tenants; the
   recalls served a second is what the default per-token rate is derived from
   (`MEMORY_API_RATE` in config/settings/base.py).
2. The four quiet tenants' paced recalls (one each every `--interval` s): p50
   and p95 alone, then during three floods, each from its own process (its CPU
   time reported): 40 connections in a closed loop with one tenant's token that
   ignore Retry-After; the same with another tenant's honouring it; 40 connections with a new unknown
   token each time from 127.0.0.2. Each flood is preceded by half a phase of
   the quiet tenants alone, and its ratio is to that: the load of a shared
   machine drifts within a run.

The load runs on the same two cores as the server: figures are noisy and a
floor for this machine, and the ratios (the same run, the same machine) are
what to read. Nothing is asserted. The flood process runs at the server's
priority (`--flood-nice` lowers it, to see how much of what is left is the
flood client's own CPU rather than the server's answers), and this code is
served by sync workers as the run command starts them (`--threads` for gthread).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402 - after the path is set
from load import percentile  # noqa: E402
from load import seed as load_seed  # noqa: E402

DATABASE = "archivist_fairness"
QUESTIONS = ("tea", "what does she prefer", "coffee", "water")
FLOODS = (  # what each flood does, and the tenant whose token it sends
    ("flood ignoring Retry-After", {"polite": False, "unknown": False, "tenant": 0}),
    ("flood honouring Retry-After", {"polite": True, "unknown": False, "tenant": 11}),
    ("unknown tokens from 127.0.0.2", {"polite": False, "unknown": True, "tenant": 0}),
)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15, help="each phase")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between one quiet tenant's recalls")
    parser.add_argument("--connections", type=int, default=40, help="the flood's connections")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, default=0, help="this code's server: gthread workers of this many threads (0: sync)"
    )
    parser.add_argument(
        "--flood-nice", type=int, default=0, help="the flood processes' niceness (0: as the server's, the default)"
    )
    parser.add_argument("--memories", type=int, default=20)
    parser.add_argument("--embedder", default="local", choices=("none", "local"))
    parser.add_argument("--against", default="", help="the baseline's commit (default: before the fair share)")
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench-fairness"))
    parser.add_argument("--port", type=int, default=0, help="default: a free one for each server")
    parser.add_argument("--flood-child", default="", help=argparse.SUPPRESS)  # a flood process's JSON arguments
    return parser.parse_args()


def step(message: str) -> None:
    print(f"[fairness] {message}", flush=True)


def seed(memories: int) -> list[dict]:
    """Twelve tenants as `bench/load.py` seeds them: 0 floods ignoring Retry-After, 11 honouring it, 1-4 are
    quiet, 5-10 measure capacity (each flood its own token: a token's rate window outlives its phase)."""
    return load_seed(argparse.Namespace(tenants=12, memories=memories, seed=7))


def recall(port: int, tenant: dict, rng: random.Random, *, token: str = "", source: str = "") -> tuple[int, dict]:
    """One recall on a fresh connection (sync workers close each one): its status and headers."""
    body = json.dumps({"place": rng.choice(tenant["places"]), "question": rng.choice(QUESTIONS)})
    headers = {"Authorization": f"Bearer {token or tenant['token']}", "Content-Type": "application/json"}
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=60, source_address=(source, 0) if source else None
    )
    try:
        connection.request("POST", "/api/v1/recall", body, headers)
        response = connection.getresponse()
        response.read()
        return response.status, dict(response.getheaders())
    except OSError:
        return 0, {}
    finally:
        connection.close()


def quiet_tenants(port: int, tenants: list[dict], seconds: float, interval: float) -> list[tuple[int, float]]:
    """Each tenant recalls every `interval` seconds, on schedule (late calls are sent at once): (status, ms)."""
    calls: list[tuple[int, float]] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def paced(number: int, tenant: dict) -> None:
        rng = random.Random(number)
        due = time.monotonic() + interval * number / len(tenants)
        while due < stop_at:
            time.sleep(max(0.0, due - time.monotonic()))
            started = time.perf_counter()
            status, _ = recall(port, tenant, rng)
            with lock:
                calls.append((status, (time.perf_counter() - started) * 1000))
            due += interval

    threads = [threading.Thread(target=paced, args=(n, tenant)) for n, tenant in enumerate(tenants)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return calls


def closed_loop(port: int, tenants: list[dict], clients: int, seconds: float) -> Counter:
    """`clients` connections recalling back to back across `tenants`: the statuses answered."""
    statuses: Counter = Counter()
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def loop(number: int) -> None:
        rng = random.Random(number)
        while time.monotonic() < stop_at:
            status, _ = recall(port, tenants[number % len(tenants)], rng)
            with lock:
                statuses[status] += 1

    threads = [threading.Thread(target=loop, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def flood_child(spec: dict) -> None:
    """A flood process: `connections` closed-loop recalls; prints its statuses, first 429 and CPU time as JSON."""
    statuses: Counter = Counter()
    first_refusal: list[float] = []
    lock = threading.Lock()
    started = time.monotonic()
    stop_at = started + spec["seconds"]
    tenant = spec["tenant"]

    def loop(number: int) -> None:
        rng = random.Random(number)
        while time.monotonic() < stop_at:
            token = f"arch_{secrets.token_urlsafe(32)}" if spec["unknown"] else ""
            status, headers = recall(spec["port"], tenant, rng, token=token, source=spec["source"])
            with lock:
                statuses[status] += 1
                if status == 429 and not first_refusal:
                    first_refusal.append(time.monotonic() - started)
            if status == 429 and spec["polite"]:
                time.sleep(min(float(headers.get("Retry-After", "1")), max(0.0, stop_at - time.monotonic())))

    threads = [threading.Thread(target=loop, args=(n,)) for n in range(spec["connections"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    times = os.times()
    print(
        json.dumps(
            {
                "statuses": dict(statuses),
                "first_429": first_refusal[0] if first_refusal else None,
                "cpu": times.user + times.system,
            }
        )
    )


def flooded(args, port: int, tenants: list[dict], manner: dict) -> tuple[list[tuple[int, float]], dict]:
    """The quiet tenants' calls while a flood process runs, and what the flood process reports."""
    spec = {
        "port": port,
        "seconds": args.seconds,
        "connections": args.connections,
        "source": "127.0.0.2" if manner["unknown"] else "",
        **manner,
        "tenant": tenants[manner["tenant"]],
    }
    niceness = args.flood_nice
    child = subprocess.Popen(
        [sys.executable, __file__, "--flood-child", json.dumps(spec)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=(lambda: os.nice(niceness)) if niceness else None,
    )
    time.sleep(1)  # the flood is under way before the quiet tenants are measured
    calls = quiet_tenants(port, tenants[1:5], args.seconds - 1, args.interval)
    output, _ = child.communicate(timeout=args.seconds + 120)
    return calls, json.loads(output.strip().splitlines()[-1])


def worker_kind(workers: int, threads: int) -> str:
    return f"{workers} gthread workers × {threads} threads" if threads else f"{workers} sync workers"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(args, data_dir: Path, root: Path, label: str) -> tuple[int, subprocess.Popen]:
    """One gunicorn serving `root`, as the run command starts it (or with `--threads`): its port and process."""
    server_dir = data_dir / label
    server_dir.mkdir(exist_ok=True)
    port = args.port or free_port()  # a port another server holds would answer /healthz for it
    threads = args.threads if root == ROOT else 0
    step(f"{label}: gunicorn ({worker_kind(args.workers, threads)}) on port {port} serving {root}")
    process = harness.start_gunicorn(
        port=port, data_dir=server_dir, workers=args.workers, threads=threads, root=root, sync=not threads
    )
    return port, process


def measured(args, tenants: list[dict], servers: dict[str, int]) -> list[dict]:
    """Against each server (label: port), both up and taking turns phase by phase, so the machine's drifting
    load falls on both alike: capacity, the quiet tenants alone, then before each flood alone again for half
    a phase and during the flood. Redis is emptied before each phase (rate windows, shares, known tokens)."""
    from django.core.cache import cache

    quiet = tenants[1:5]
    results = {label: {"label": label} for label in servers}
    for port in servers.values():
        quiet_tenants(port, quiet, 3, args.interval)  # each worker's first calls
    for label, port in servers.items():
        cache.clear()
        capacity = closed_loop(port, tenants[5:], 2 * args.workers, args.seconds)
        results[label]["capacity"] = capacity.get(200, 0) / args.seconds
        step(f"{label}: capacity {results[label]['capacity']:.1f} recalls/s ({dict(capacity)})")
    for label, port in servers.items():
        cache.clear()
        results[label]["alone"] = quiet_tenants(port, quiet, args.seconds, args.interval)
    for name, manner in FLOODS:
        for label, port in servers.items():
            step(f"{label}: {name}")
            time.sleep(2)  # the last flood's connections are gone
            cache.clear()
            results[label][f"alone before {name}"] = quiet_tenants(port, quiet, args.seconds / 2, args.interval)
            results[label][name] = flooded(args, port, tenants, manner)
    return list(results.values())


def row(label: str, calls: list[tuple[int, float]], alone: list[tuple[int, float]], flood: dict | None) -> str:
    latencies = [ms for status, ms in calls if status == 200]
    base = [ms for status, ms in alone if status == 200]
    failed = sum(1 for status, _ in calls if status != 200)
    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
    base50, base95 = percentile(base, 0.5), percentile(base, 0.95)
    ratio = f"×{p50 / base50:.2f} / ×{p95 / base95:.2f}"
    if flood is None:
        return f"| {label} | {p50:.0f} / {p95:.0f} | – | – | {len(calls)} | {failed} | – | – | – |"
    statuses = flood["statuses"]
    first = f"{flood['first_429']:.2f} s" if flood["first_429"] is not None else "none"
    served, refused = statuses.get("200", 0), statuses.get("429", 0)
    others = sum(count for status, count in statuses.items() if status not in ("200", "429"))
    return (
        f"| {label} | {p50:.0f} / {p95:.0f} | {base50:.0f} / {base95:.0f} | {ratio} | {len(calls)} | {failed}"
        f" | {served} / {refused} / {others}"
        f" | {first} | {flood['cpu']:.1f} s |"
    )


def report(args, results: list[dict]) -> None:
    print(
        f"\n## Fairness: four quiet tenants' recalls (one each every {args.interval} s) against a flood of"
        f" {args.connections} connections, {args.seconds:.0f} s a phase; before: {worker_kind(args.workers, 0)},"
        f" this code: {worker_kind(args.workers, args.threads)}; flood processes at niceness {args.flood_nice}\n"
    )
    print(f"Load average at the end: {' '.join(f'{value:.2f}' for value in os.getloadavg())} (two cores).\n")
    print(
        "| server, phase | quiet p50 / p95 ms | alone just before, ms | × alone just before (p50 / p95)"
        " | quiet calls | quiet failed | flood 200 / 429 / other | flood's first 429 | flood CPU |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for figures in results:
        alone = figures["alone"]
        print(row(f"{figures['label']}: alone", alone, alone, None))
        for name, _ in FLOODS:
            calls, flood = figures[name]
            print(row(f"{figures['label']}: {name}", calls, figures[f"alone before {name}"], flood))
    for figures in results:
        print(f"\n{figures['label']}: capacity {figures['capacity']:.1f} recalls/s (six closed-loop clients).")


def baseline_commit(against: str) -> str:
    """`--against`, or the parent of the commit that added the fair share."""
    if against:
        return against
    added = subprocess.run(
        ["git", "-C", str(ROOT), "log", "--diff-filter=A", "--format=%H", "--", "lib/api/fair_share.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return f"{added[-1]}^" if added else "HEAD"


def main() -> None:
    args = arguments()
    if args.flood_child:
        flood_child(json.loads(args.flood_child))
        return
    data_dir = Path(args.data_dir).resolve()
    shutil.rmtree(data_dir, ignore_errors=True)
    step(f"services and schema in {data_dir}")
    server, redis = harness.start_services(data_dir, DATABASE, {"ARCHIVIST_EMBEDDER": args.embedder})
    try:
        from django.db import connections

        tenants = seed(args.memories)
        connections.close_all()
        before = harness.exported_checkout(data_dir, baseline_commit(args.against))
        processes: list[subprocess.Popen] = []
        try:
            ports = {}
            for label, root in (("before", before), ("this code", ROOT)):
                ports[label], process = serve(args, data_dir, root, label)
                processes.append(process)
            results = measured(args, tenants, ports)
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=30)
    finally:
        harness.stop_services(server, redis)
    report(args, results)


if __name__ == "__main__":
    main()
