"""What the thread-neighbour walk costs a contextual recall in an organisation without threads, pairwise.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/thread_walk.py --questions 60

Seeds the LoCoMo dev conversations (one organisation each, no thread, every turn a fact of one channel,
with stand-in vectors: the walk's cost does not depend on them), then builds and runs each question's
contextual statement three ways, the order rotating question by question:

- **no walk**: no neighbour walk registered (what `has_threads` used to give an organisation without threads);
- **walk**: the threads app's walk (`threads.recall.thread_neighbours_sql`) always in the statement;
- **gated**: the walk only where `Thread.objects.filter(organisation_id=...).exists()`, the query included;
- **gated, same connection**: the same question asked in SQL on the statement's own connection and transaction;
- **gated, kept briefly**: `threads.recall.thread_neighbour_walk` as registered, the answer kept per process.

Each time is building the plan plus running it as `archivist_app` under row-level security, the fastest of
`--rounds`. Printed: p50 of each, the median of the per-question ratios against "no walk", and the load.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
DATABASE = "archivist_thread_walk"
CHANNEL = "conversation"
VARIANTS = ("no walk", "walk", "gated", "gated, same connection", "gated, kept briefly")
DIMENSIONS = 384


def arguments() -> argparse.Namespace:
    from quality import DEFAULT_DATA

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo JSON file")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var" / "bench-thread-walk")
    parser.add_argument("--questions", type=int, default=0, help="questions per conversation (0: all)")
    parser.add_argument("--rounds", type=int, default=3, help="times each question is asked each way (fastest kept)")
    return parser.parse_args()


def stand_in(text: str) -> list[float]:
    """A unit vector drawn from the text's hash: the same text, the same vector."""
    import numpy as np

    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(DIMENSIONS)
    return (vector / np.linalg.norm(vector)).tolist()


def seed(conversations) -> dict[str, str]:
    from contextual_statement import seed_turns

    vectors = [stand_in(turn.body) for conv in conversations for turn in conv.turns]
    return seed_turns(conversations, vectors, model="stand-in", slug="walk")


def always(request, tenant: str, predicate: str) -> str:
    from threads.recall import thread_neighbours_sql

    return thread_neighbours_sql(tenant, predicate)


def gated_walk(request, tenant: str, predicate: str) -> str | None:
    from threads.models import Thread
    from threads.recall import thread_neighbours_sql

    if not Thread.objects.filter(organisation_id=request.organisation_id).exists():
        return None
    return thread_neighbours_sql(tenant, predicate)


def gated_on(cursor):
    """The gate asked on the statement's own cursor, inside its transaction."""
    from threads.recall import thread_neighbours_sql

    def walk(request, tenant: str, predicate: str) -> str | None:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM threads_thread WHERE organisation_id = %s)", [tenant_id(request)])
        return thread_neighbours_sql(tenant, predicate) if cursor.fetchone()[0] else None

    return walk


def tenant_id(request) -> str:
    return str(request.organisation_id)


def walks_for(variant: str, cursor) -> dict:
    from threads.recall import thread_neighbour_walk

    return {
        "no walk": {},
        "walk": {"threads": always},
        "gated": {"threads": gated_walk},
        "gated, same connection": {"threads": gated_on(cursor)},
        "gated, kept briefly": {"threads": thread_neighbour_walk},
    }[variant]


def timed(raw, organisation_id: str, question: str, variant: str) -> float:
    """Build the plan with the variant's walks registered, then run it in its own transaction under the role."""
    from django.utils import timezone

    from memories.recall import contextual
    from memories.recall.candidates import RecallRequest
    from memories.recall.query import run_plan
    from memories.scopes import Place
    from tenancy.sql import APP_ROLE, TENANT_SETTING

    request = RecallRequest(
        organisation_id=organisation_id,
        place=Place(CHANNEL, "private", ()),
        limit=contextual.CANDIDATES,
        pool=contextual.CANDIDATES,
        lists=("semantic", "lexical"),
        question=question,
        query_vector=stand_in(question),
        model="stand-in",
        now=timezone.now(),
        count_unembedded=True,
    )
    with raw.transaction(), raw.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}; SELECT set_config(%s, %s, true)", [TENANT_SETTING, organisation_id])
        contextual._neighbour_walks.clear()
        contextual._neighbour_walks.update(walks_for(variant, cursor))
        started = time.perf_counter()
        run_plan(contextual.contextual_plan(request), cursor)
        return (time.perf_counter() - started) * 1000


def measure(args, conversations, organisations) -> dict[str, list[float]]:
    import psycopg

    times: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    asked = 0
    with psycopg.connect(os.environ["DATABASE_URL"], cursor_factory=psycopg.ClientCursor) as raw:
        for conv in conversations:
            for question in conv.questions[: args.questions or None]:
                order = VARIANTS[asked % len(VARIANTS) :] + VARIANTS[: asked % len(VARIANTS)]
                best = {variant: float("inf") for variant in VARIANTS}
                for _ in range(args.rounds):
                    for variant in order:
                        best[variant] = min(
                            best[variant], timed(raw, organisations[conv.sample_id], question.text, variant)
                        )
                for variant in VARIANTS:
                    times[variant].append(best[variant])
                asked += 1
    return times


def report(times: dict[str, list[float]]) -> None:
    base = times[VARIANTS[0]]
    print(f"\n## Thread walk in an organisation without threads ({len(base)} questions)\n")
    print("| variant | p50 ms | p95 ms | median per-question ratio to no walk |")
    print("| --- | --- | --- | --- |")
    for variant in VARIANTS:
        values = times[variant]
        p95 = sorted(values)[int(0.95 * (len(values) - 1))]
        ratio = statistics.median(new / old for old, new in zip(base, values, strict=True))
        print(f"| {variant} | {statistics.median(values):.2f} | {p95:.2f} | {ratio:.3f} |")
    print(f"\nLoad average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (2 cores shared with other work).")


def main() -> None:
    args = arguments()
    from harness import start_services
    from quality import load_conversations

    server, redis = start_services(args.data_dir, DATABASE, {"ARCHIVIST_EMBEDDER": "none"})
    try:
        conversations = load_conversations(args.data)
        print(f"seeding {sum(len(conv.turns) for conv in conversations)} turns", flush=True)
        organisations = seed(conversations)
        report(measure(args, conversations, organisations))
    finally:
        redis.stop()
        del server


if __name__ == "__main__":
    main()
