"""The Python client's cost per call against a raw httpx call, and bulk remembering through the batch endpoint.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/clients.py          # about a minute, prints figures

1. Its own PostgreSQL and Redis (var/bench-clients), one organisation with an agent, gunicorn as the run
   command starts it (requests as `archivist_app`, under row-level security), no embedder (embedding
   happens after a write in the workers, so it is not part of a write's cost).
2. Per call, interleaved so drift hits both alike: `recall` and `remember` through `archivist_client`
   and through a bare `httpx.Client` with the same keep-alive connection and JSON; median and p95 of each,
   and the client's overhead (median difference), from `--calls` calls of each.
3. Rows per second: `--rows` remembers one request each, then the same through `remember_many`
   (`POST /api/v1/memories/batch`, 100 per call, each item with its own idempotency key), alternated with
   the same call through bare `httpx`, with the median call and the load average beside it. The baseline
   is the same script run from a checkout of main, the runs alternated (`--data-dir` keeps them apart).

The client runs on the same two cores as the server; nothing is asserted.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness import client_bench_server  # noqa: E402 - after the path is set

DATABASE = "archivist_clients"
PLACE = {"channel": "C-bench", "kind": "public", "people": []}


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--port", type=int, default=0, help="default: a free port on loopback")
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench-clients"))
    return parser.parse_args()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    args = arguments()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would drown the figures
    with client_bench_server(Path(args.data_dir), DATABASE, "bench-clients", port=args.port) as (base, token):
        import httpx
        from archivist_client import Archivist

        raw = httpx.Client(base_url=base + "/api/v1/", headers={"Authorization": f"Bearer {token}"})
        client = Archivist(base, token, place=PLACE)
        for index in range(20):  # warm both connections and the server's caches
            client.remember(body=f"Warm-up fact {index}", subject_type="workspace")
            raw.post("recall", json={"question": "warm", "place": PLACE}).raise_for_status()

        times: dict[str, list[float]] = {
            "client recall": [],
            "raw recall": [],
            "client remember": [],
            "raw remember": [],
        }
        for index in range(args.calls):
            times["raw recall"].append(
                timed(lambda: raw.post("recall", json={"question": "fact", "place": PLACE}).raise_for_status())
            )
            times["client recall"].append(timed(lambda: client.recall(question="fact")))
            body = {"body": f"Raw fact {index}", "place": PLACE, "subject_type": "workspace"}
            times["raw remember"].append(
                timed(
                    lambda body=body: raw.post(
                        "memories", json=body, headers={"Idempotency-Key": str(uuid.uuid4())}
                    ).raise_for_status()
                )
            )
            times["client remember"].append(
                timed(lambda index=index: client.remember(body=f"Client fact {index}", subject_type="workspace"))
            )
        print(f"\nPer call, {args.calls} calls each, interleaved (ms):")
        for name, values in times.items():
            print(f"  {name:16} median {statistics.median(values):6.2f}  p95 {percentile(values, 0.95):6.2f}")
        for op in ("recall", "remember"):
            overhead = statistics.median(times[f"client {op}"]) - statistics.median(times[f"raw {op}"])
            print(f"  client overhead on {op}: {overhead:+.2f} ms per call (median difference)")

        started = time.perf_counter()
        for index in range(args.rows):
            client.remember(body=f"One by one {index}", subject_type="workspace")
        single = args.rows / (time.perf_counter() - started)
        items = [{"body": f"Batched fact {index}", "subject_type": "workspace"} for index in range(args.rows)]
        calls: dict[str, list[float]] = {"client": [], "raw": []}  # ms per call of 100, alternated
        created = 0
        for start in range(0, args.rows, 100):
            chunk = items[start : start + 100]
            started = time.perf_counter()
            created += client.remember_many(chunk).created
            calls["client"].append((time.perf_counter() - started) * 1000)
            keyed = [{**item, "place": PLACE, "idempotency_key": str(uuid.uuid4())} for item in chunk]
            started = time.perf_counter()
            answer = raw.post("memories/batch", json={"items": keyed})
            calls["raw"].append((time.perf_counter() - started) * 1000)
            created += answer.raise_for_status().json()["created"]
        assert created == 2 * args.rows, created
        batched = args.rows / (sum(calls["client"]) / 1000)
        print(f"\nRows per second, {args.rows} rows: one request each {single:.0f}/s; batch of 100 {batched:.0f}/s")
        for name, values in calls.items():
            rate = len(values) * 100 / (sum(values) / 1000)
            print(f"  {name:6} batch call of 100: {rate:4.0f} rows/s, median {statistics.median(values):.0f} ms")
        print(f"  load average (1, 5, 15 min) at the end: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
        client.close()
        raw.close()


if __name__ == "__main__":
    main()
