"""The question embedded ahead (`memories.embeddings.ahead`): a contextual recall with it and without it.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/question_ahead.py [--requests 200]

In its own PostgreSQL and Redis (var/bench-ahead): the turns of one LoCoMo
conversation remembered in a private channel and embedded by the local model,
then `POST /api/v1/recall` (`mode: auto`) for its questions through Django's
WSGI handler in this process, as `archivist_app`, alternating request by
request between a token this process trusts (its question embedded while the
token's round trip runs) and the same token forgotten just before (the question
embedded by recall itself, as before). The same code, the same server, the same
questions; only the start of the embedding differs. Figures are printed; nothing
is asserted. With no second core free (load above 1), expect no gain: the
embedding then waits for the core the request runs on.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import harness  # noqa: E402
import request_overhead  # noqa: E402


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="recalls on each side")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var" / "bench-ahead")
    return parser.parse_args()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main():
    args = arguments()
    server, redis = harness.start_services(
        args.data_dir.resolve(),
        "archivist_ahead",
        {"ARCHIVIST_EMBEDDER": "local", "ARCHIVIST_TOKEN_RATE": "100000000/min"},
    )
    try:
        _, _, token, turns, questions, _ = request_overhead.seed()
        from django.conf import settings
        from django.core.handlers.wsgi import WSGIHandler
        from django.db import connections

        from memories.embeddings import ahead
        from memories.embeddings.embedders import warm_up

        connections.close_all()
        settings.DATABASE_ROLE = "archivist_app"
        application = WSGIHandler()
        print(f"remembering {len(turns[:400])} turns and embedding them", flush=True)
        for turn in turns[:400]:
            body = {"body": turn[:1900], "place": request_overhead.PLACE, "subject_type": "workspace"}
            request_overhead.wsgi_call(application, token, "/api/v1/memories", body, "201")
        # The rows embedded as the worker would, so recall ranks by meaning over all of them.
        from memories.embeddings.writes import memory_embed_batch
        from memories.models import Memory

        connections.close_all()
        settings.DATABASE_ROLE = ""
        ids = [str(pk) for pk in Memory.objects.values_list("pk", flat=True)]
        for start in range(0, len(ids), 64):
            memory_embed_batch(ids=ids[start : start + 64])
        unembedded = Memory.objects.filter(embedding__isnull=True).count()
        print(f"{len(ids) - unembedded} of {len(ids)} rows embedded", flush=True)
        connections.close_all()
        settings.DATABASE_ROLE = "archivist_app"
        warm_up()
        timings: dict[str, list[float]] = {"embedded ahead": [], "embedded in recall": []}
        started_load = os.getloadavg()[0]
        for index in range(2 * args.requests):
            side = list(timings)[index % 2]
            if side == "embedded in recall":
                ahead.forget_trusted()
            question = questions[(index // 2) % len(questions)]
            started = time.perf_counter()
            request_overhead.wsgi_call(
                application, token, "/api/v1/recall", {"question": question, "place": request_overhead.PLACE}, "200"
            )
            timings[side].append((time.perf_counter() - started) * 1000)
        print(
            f"\nrecall requests in process, {args.requests} each, alternating; load {started_load:.2f} → "
            f"{os.getloadavg()[0]:.2f}"
        )
        for side, values in timings.items():
            print(f"  {side:20} p50 {statistics.median(values):6.2f} ms   p95 {percentile(values, 0.95):6.2f} ms")
        ratio = statistics.median(timings["embedded ahead"]) / statistics.median(timings["embedded in recall"])
        print(f"  ahead / in recall at p50: {ratio:.3f}")
    finally:
        redis.stop()
        del server


if __name__ == "__main__":
    main()
