"""The contextual recall statement, one read of the place against one read per list, pairwise (issue 15).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/contextual_statement.py

Loads the LoCoMo dev conversations (one organisation each, every turn a fact
of one private channel, in order, with its session's date, embedded by the
real model; the vectors are cached in the data folder), then asks every
category 1-4 question's contextual statement twice, built by the same
`memories.recall.contextual.contextual_plan`:

- **per list** (`shared_read=False`, as before issue 15 and as a tenant with an
  HNSW index still reads): the vector list, the word list, the pinned list,
  the unembedded counts and the BM25 sample each read the table;
- **one read** (`shared_read=True`, the default for an exact vector list): the
  place's rows read once (`place`) and every list reading that.

Each question runs both, the order alternating, as the web role
`archivist_app` under row-level security (tenant set in the transaction) and
as the owner, through psycopg with client-side binding as Django sends it.
Printed: p50/p95 of each, the median of the per-question ratios, how many
questions gave the same ranked top 10 (and hit@5/hit@10 of each against the
questions' evidence), the load average, and `EXPLAIN (ANALYZE, BUFFERS)` of
one question each way under the role. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
DATABASE = "archivist_statement"
CHANNEL = "conversation"
VARIANTS = ("per list", "one read")


def arguments() -> argparse.Namespace:
    from quality import DEFAULT_DATA

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo JSON file")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var" / "bench-statement")
    parser.add_argument("--questions", type=int, default=0, help="questions per conversation (0: all)")
    parser.add_argument("--rounds", type=int, default=3, help="times each question is asked each way (fastest kept)")
    return parser.parse_args()


def step(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def turn_vectors(args, bodies: list[str]) -> np.ndarray:
    """The real model's vectors of every turn, cached in the data folder by the data file's hash."""
    digest = hashlib.sha256(args.data.read_bytes()).hexdigest()[:16]
    cache = args.data_dir / f"vectors-{digest}.npy"
    if cache.exists():
        return np.load(cache)
    from memories.embeddings.embedders import LocalEmbedder

    step(f"embedding {len(bodies)} turns with the real model")
    vectors = LocalEmbedder(batch_size=64).model.encode(bodies, batch_size=64, normalize_embeddings=True)
    np.save(cache, vectors)
    return vectors


def seed(args, conversations) -> dict[str, str]:
    """One organisation per conversation, its turns as facts of one channel, written in order."""
    vectors = turn_vectors(args, [turn.body for conv in conversations for turn in conv.turns])
    return seed_turns(conversations, [vector.tolist() for vector in vectors], model="all-MiniLM-L6-v2")


def seed_turns(conversations, vectors: list[list[float]], *, model: str, slug: str = "locomo") -> dict[str, str]:
    """Each conversation an organisation, its turns facts of one channel with these vectors, written in order."""
    from django.db import connection

    from accounts.models import Organisation
    from memories.models import Memory
    from memories.writer import normalise_body

    organisations, index, started = {}, 0, datetime.now(UTC) - timedelta(days=1)
    for conv in conversations:
        organisation = Organisation.objects.create(slug=f"{slug}-{conv.sample_id.lower()}", name=conv.sample_id)
        organisations[conv.sample_id] = str(organisation.pk)
        rows = []
        for turn in conv.turns:
            rows.append(
                Memory(
                    organisation=organisation,
                    bucket="learned",
                    body=normalise_body(turn.body),
                    scope="channel",
                    scope_ref=CHANNEL,
                    author="model",
                    source_kind="message",
                    source_ref=turn.dia_id,
                    occurred_at=turn.occurred_at,
                    expires_at=datetime.now(UTC) + timedelta(days=90),
                    embedding=vectors[index],
                    embedding_model=model,
                )
            )
            index += 1
        Memory.objects.bulk_create(rows)
        # Written in order, a fraction of a second apart, as the API would have written them.
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memories_memory m SET created_at = %s + (o.n * interval '200 milliseconds')"
                " FROM unnest(%s::uuid[]) WITH ORDINALITY AS o(id, n) WHERE m.id = o.id",
                [started, [row.pk for row in rows]],
            )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories_memory")
    return organisations


def question_vectors(questions: list[str]) -> dict[str, list[float]]:
    from memories.embeddings.embedders import LocalEmbedder

    model = LocalEmbedder(batch_size=64).model
    vectors = model.encode(questions, batch_size=64, normalize_embeddings=True)
    return {question: vector.tolist() for question, vector in zip(questions, vectors, strict=True)}


def plan_for(organisation_id: str, question: str, vector: list[float], shared: bool):
    from django.utils import timezone

    from memories.recall import contextual
    from memories.recall.candidates import RecallRequest
    from memories.scopes import Place

    return contextual.contextual_plan(
        RecallRequest(
            organisation_id=organisation_id,
            place=Place(CHANNEL, "private", ()),
            limit=contextual.CANDIDATES,
            pool=contextual.CANDIDATES,
            lists=("semantic", "lexical"),
            question=question,
            query_vector=vector,
            model="all-MiniLM-L6-v2",
            now=timezone.now(),
            count_unembedded=True,
            shared_read=shared,
        )
    )


def timed(raw, plan, organisation_id: str, as_app: bool) -> tuple[float, list[dict]]:
    """The statement in its own transaction, under the web role with the tenant set, or as the owner."""
    from memories.recall.query import run_plan
    from tenancy.sql import APP_ROLE, TENANT_SETTING

    with raw.transaction(), raw.cursor() as cursor:
        if as_app:
            cursor.execute(
                f"SET LOCAL ROLE {APP_ROLE}; SELECT set_config(%s, %s, true)", [TENANT_SETTING, organisation_id]
            )
        started = time.perf_counter()
        rows, _, _ = run_plan(plan, cursor)
        return (time.perf_counter() - started) * 1000, rows


def top_ten(rows: list[dict], question: str) -> list[str]:
    from memories.recall import contextual

    ranked = contextual.rank_rows(rows, question=question, limit=10)
    return [row["source_ref"] for row in ranked]


def measure(args, conversations, organisations, vectors) -> dict:
    import psycopg

    results: dict = {(variant, role): [] for variant in VARIANTS for role in ("app", "owner")}
    same, hits = 0, {variant: [0, 0] for variant in VARIANTS}
    asked = 0
    with psycopg.connect(os.environ["DATABASE_URL"], cursor_factory=psycopg.ClientCursor) as raw:
        for conv in conversations:
            organisation_id = organisations[conv.sample_id]
            for question in conv.questions[: args.questions or None]:
                plans = {
                    variant: plan_for(organisation_id, question.text, vectors[question.text], variant == VARIANTS[1])
                    for variant in VARIANTS
                }
                order = VARIANTS if asked % 2 == 0 else VARIANTS[::-1]
                found = {}
                for role in ("app", "owner"):
                    best = {variant: float("inf") for variant in VARIANTS}
                    for _ in range(args.rounds):
                        for variant in order:
                            ms, rows = timed(raw, plans[variant], organisation_id, role == "app")
                            best[variant] = min(best[variant], ms)
                            found[variant] = rows
                    for variant in VARIANTS:
                        results[(variant, role)].append(best[variant])
                tops = {variant: top_ten(found[variant], question.text) for variant in VARIANTS}
                same += tops[VARIANTS[0]] == tops[VARIANTS[1]]
                for variant in VARIANTS:
                    hits[variant][0] += bool(set(tops[variant][:5]) & set(question.evidence))
                    hits[variant][1] += bool(set(tops[variant]) & set(question.evidence))
                asked += 1
    return {"times": results, "same": same, "hits": hits, "asked": asked}


def explain(conversations, organisations, vectors) -> dict[str, str]:
    """EXPLAIN (ANALYZE, BUFFERS) of one question each way, under the web role: the scans of memories_memory."""
    import psycopg

    from tenancy.sql import APP_ROLE, TENANT_SETTING

    conv = conversations[0]
    question = conv.questions[0].text
    organisation_id = organisations[conv.sample_id]
    shown = {}
    with psycopg.connect(os.environ["DATABASE_URL"], cursor_factory=psycopg.ClientCursor) as raw:
        for variant in VARIANTS:
            plan = plan_for(organisation_id, question, vectors[question], variant == VARIANTS[1])
            with raw.transaction(), raw.cursor() as cursor:
                cursor.execute(
                    f"SET LOCAL ROLE {APP_ROLE}; SELECT set_config(%s, %s, true)", [TENANT_SETTING, organisation_id]
                )
                cursor.execute(plan.planner_settings[0])  # as run_plan runs it
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + plan.sql, plan.params)
                shown[variant] = "\n".join(row[0] for row in cursor.fetchall())
    return shown


def report(measured: dict, plans: dict[str, str], data_dir: Path) -> None:
    times = measured["times"]
    print()
    print(f"## Contextual statement, one read of the place against one per list ({measured['asked']} questions)")
    print()
    print("| statement, ms (fastest of the rounds per question) | p50 | p95 |")
    print("| --- | --- | --- |")
    for role, label in (("app", "as archivist_app (row-level security)"), ("owner", "as the superuser (no policies)")):
        for variant in VARIANTS:
            values = times[(variant, role)]
            p95 = sorted(values)[int(0.95 * (len(values) - 1))]
            print(f"| {variant}, {label} | {statistics.median(values):.2f} | {p95:.2f} |")
    for role in ("app", "owner"):
        ratios = [new / old for old, new in zip(times[(VARIANTS[0], role)], times[(VARIANTS[1], role)], strict=True)]
        print(f"\nOne read / per list, {role}: median of per-question ratios {statistics.median(ratios):.3f}.")
    rls = {
        variant: statistics.median(times[(variant, "app")]) - statistics.median(times[(variant, "owner")])
        for variant in VARIANTS
    }
    print(
        "Row-level security's share (p50 as archivist_app minus as owner): "
        + ", ".join(f"{v} {ms:.2f} ms" for v, ms in rls.items())
        + "."
    )
    asked = measured["asked"]
    print(f"Same ranked top 10 both ways: {measured['same']} of {asked} questions.")
    for variant, (five, ten) in measured["hits"].items():
        print(f"- {variant}: hit@5 {five / asked:.3f}, hit@10 {ten / asked:.3f}")
    print(f"Load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (2 cores shared with other work).")
    for variant, text in plans.items():
        path = data_dir / f"explain-{variant.replace(' ', '-')}.txt"
        path.write_text(text)
        scans = [
            line.strip() for line in text.splitlines() if " on memories_memory" in line or "Execution Time" in line
        ]
        print(f"\nEXPLAIN (ANALYZE, BUFFERS), {variant}, under archivist_app (all of it in {path}):")
        print("\n".join(f"    {line[:150]}" for line in scans))


def main() -> None:
    args = arguments()
    from harness import start_services
    from quality import load_conversations

    args.data_dir.mkdir(parents=True, exist_ok=True)
    server, redis = start_services(args.data_dir, DATABASE, {"ARCHIVIST_EMBEDDER": "none"})
    try:
        conversations = load_conversations(args.data)
        step(f"seeding {sum(len(conv.turns) for conv in conversations)} turns in {len(conversations)} organisations")
        organisations = seed(args, conversations)
        vectors = question_vectors(sorted({q.text for conv in conversations for q in conv.questions}))
        step("asking each question both ways, alternating")
        measured = measure(args, conversations, organisations, vectors)
        report(measured, explain(conversations, organisations, vectors), args.data_dir)
    finally:
        redis.stop()
        del server


if __name__ == "__main__":
    main()
