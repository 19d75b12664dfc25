"""Consolidation throughput in process, pairwise: the same conversation's events consolidated with the
rows embedded by torch (the path before) and by ONNX Runtime in length-sorted batches (the path now).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/consolidation.py --rounds 3

One LoCoMo dev conversation (419 turns) is ingested as one thread in a private place
of an organisation of its own, once per run, and consolidated by `thread_consolidate`
(rules extractor, episodes on, every episode and fact candidate embedded). The runs
alternate torch, ONNX, torch, ONNX, ... so both see the same load; each figure is
events per wall-clock second and per CPU-second of this process (PostgreSQL's CPU
is not counted). The raw encode of the same episode bodies (torch `encode`, and
ONNX `encode_many`) is measured beside them: the ceiling either path could reach.
Nothing is asserted; figures are printed with the load average.
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
import quality  # noqa: E402

DATABASE = "archivist_bench_consolidation"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="torch/ONNX pairs (default 3)")
    parser.add_argument("--conversation", type=int, default=0, help="which dev conversation (default the first)")
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench-consolidation"))
    return parser.parse_args()


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def timed(function) -> tuple[object, float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    args = arguments()
    server, redis = harness.start_services(Path(args.data_dir), DATABASE, {"LOG_LEVEL": "WARNING"})
    from accounts.services import agent_create, organisation_create
    from memories.embeddings.embedders import get_embedder
    from threads.consolidation import thread_consolidate
    from threads.ingest import thread_events_ingest

    conversation = quality.load_conversations(quality.DEFAULT_DATA)[args.conversation]
    events = [
        {"id": t.dia_id, "role": "user", "author": t.speaker, "text": t.text, "time": t.occurred_at,
         "place": quality.PLACE}
        for t in conversation.turns
        if t.text.strip()
    ]  # fmt: skip
    bodies = [f"{t.speaker}: {t.text}" for t in conversation.turns if t.text.strip()]
    embedder = get_embedder()
    if embedder.prepare_query_encoder() != "onnx":
        raise SystemExit(f"ONNX Runtime is not available here: {embedder.fallback_reason}")
    embedder._torch_embed(bodies[:16])  # both runtimes loaded and warm before timing
    embedder.embed(bodies[:16])

    def consolidate(runtime: str, run: int) -> tuple[float, float, int]:
        embedder.query_runtime = runtime  # which path `embed` takes; the encoder stays loaded
        organisation = organisation_create(slug=f"c-{runtime}-{run}", name=f"{runtime} {run}")
        agent, _ = agent_create(organisation=organisation, name="bench-agent")
        for start in range(0, len(events), 100):
            thread, _ = thread_events_ingest(
                organisation=organisation, agent=agent, thread_id="conversation", events=events[start : start + 100]
            )
        result, seconds, cpu = timed(lambda: thread_consolidate(thread_id=thread.pk))
        return seconds, cpu, len(result.episodes)

    figures: dict[str, list[tuple[float, float]]] = {"torch": [], "onnx": [], "raw torch": [], "raw onnx": []}
    for run in range(args.rounds):
        for runtime in ("torch", "onnx"):
            seconds, cpu, episodes = consolidate(runtime, run)
            figures[runtime].append((len(events) / seconds, len(events) / cpu))
            print(f"round {run + 1}, {runtime}: {len(events) / seconds:.0f} events/s, {len(events) / cpu:.0f} per "
                  f"CPU-s ({episodes} episodes, {seconds:.2f} s; load {load_average()})")  # fmt: skip
        _, seconds, cpu = timed(lambda: embedder._torch_embed(bodies))
        figures["raw torch"].append((len(bodies) / seconds, len(bodies) / cpu))
        _, seconds, cpu = timed(lambda: embedder._query_encoder.encode_many(bodies))
        figures["raw onnx"].append((len(bodies) / seconds, len(bodies) / cpu))
    print(f"\n{len(events)} events, {os.cpu_count()} cores, load {load_average()}; medians of {args.rounds}:")
    median = {name: tuple(statistics.median(v[i] for v in values) for i in (0, 1)) for name, values in figures.items()}
    for name, (wall, cpu) in median.items():
        print(f"  {name:10} {wall:6.0f} per s   {cpu:6.0f} per CPU-s")
    print(f"  ONNX / torch consolidation: {median['onnx'][0] / median['torch'][0]:.2f}x wall, "
          f"{median['onnx'][1] / median['torch'][1]:.2f}x CPU")  # fmt: skip
    pairs = [onnx[0] / torch[0] for onnx, torch in zip(figures["onnx"], figures["torch"], strict=True)]
    print(f"  per round (wall): {', '.join(f'{ratio:.2f}' for ratio in pairs)}")
    harness.stop_services(server, redis)


if __name__ == "__main__":
    main()
