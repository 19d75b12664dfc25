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
   stored turn (mean, min);
5. quality: every question through the real recall (`recall`, mode `auto`,
   which is contextual with a vector), scored by quality.py's `Score`: first
   with the worker's fp32 rows and fp32 questions, then with every row's vector
   replaced by its int8 one (one transaction) and the questions embedded int8;
   hit@5, hit@10 both ways and how many questions' top 10 changed.

Nothing is asserted; the figures are printed.
"""

from __future__ import annotations

import argparse
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
UPDATE_BATCH = 200


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


def cosines(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return np.sum(first * second, axis=1) / (np.linalg.norm(first, axis=1) * np.linalg.norm(second, axis=1))


def stored_rows(conversations: list) -> list[tuple[str, str]]:
    """(id, body) of every embedded turn of the bench's organisations."""
    from memories.models import Memory

    rows = Memory.objects.filter(
        organisation_id__in=[conv.organisation_id for conv in conversations], embedding__isnull=False
    )
    return [(str(memory_id), body) for memory_id, body in rows.order_by("id").values_list("id", "body")]


def replace_vectors(rows: list[tuple[str, str]], vectors: np.ndarray) -> None:
    """Every row's vector replaced by `vectors` in one transaction, its model id left as it is."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        for start in range(0, len(rows), UPDATE_BATCH):
            chosen = rows[start : start + UPDATE_BATCH]
            literals = [
                "[" + ",".join(f"{value:.8f}" for value in vector) + "]" for vector in vectors[start:][: len(chosen)]
            ]
            params = [
                value
                for (memory_id, _), literal in zip(chosen, literals, strict=True)
                for value in (memory_id, literal)
            ]
            cursor.execute(
                "UPDATE memories_memory AS m SET embedding = v.embedding FROM (VALUES "
                + ", ".join(["(%s::uuid, %s::vector)"] * len(chosen))
                + ") AS v(id, embedding) WHERE m.id = v.id",
                params,
            )


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
    stack = loaded_stack(conversations, data_dir)
    try:
        report = measure(conversations, data_dir)
    finally:
        from django.db import connections

        connections.close_all()
        quality.stop_stack(stack)
    print()
    print("\n".join(report))


def measure(conversations: list, data_dir: Path) -> list[str]:
    from memories.embeddings import embedders, onnx

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
    rows = stored_rows(conversations)
    say(f"embedding {len(rows)} stored turns both ways")
    fp32_rows, int8_rows = (encoders[name].encode_many([body for _, body in rows]) for name in onnx.PRECISIONS)
    turns = cosines(fp32_rows, int8_rows)
    for label, values in (("questions", questions), ("stored turns", turns)):
        lines.append(f"cosine int8 to fp32, {len(values)} {label}: mean {values.mean():.4f}, min {values.min():.4f}")
    say(f"recall, fp32 rows and questions (load average {load_average()})")
    fp32_score, fp32_tops = recall_quality(conversations)
    replace_vectors(rows, int8_rows)
    embedder = embedders.get_embedder()
    assert isinstance(embedder, embedders.LocalEmbedder) and embedder.prepare_query_encoder() == "onnx"
    embedder._query_encoder = encoders["int8"]  # the questions now int8, as the rows are
    say(f"recall, int8 rows and questions (load average {load_average()})")
    int8_score, int8_tops = recall_quality(conversations)
    for label, score in (("fp32", fp32_score), ("int8", int8_score)):
        h5, h10, r10, n = score.metric()
        lines.append(
            f"recall `auto`, {label} rows and questions: hit@5 {h5:.3f} hit@10 {h10:.3f} "
            f"recall@10 {r10:.3f} ({n} questions)"
        )
    lines.append(
        f"hit@10 int8 - fp32: {int8_score.metric()[1] - fp32_score.metric()[1]:+.3f}; "
        f"hit@5: {int8_score.metric()[0] - fp32_score.metric()[0]:+.3f}"
    )
    ordered = sum(fp32_tops[key] != int8_tops[key] for key in fp32_tops)
    as_sets = sum(set(fp32_tops[key]) != set(int8_tops[key]) for key in fp32_tops)
    lines.append(f"top 10 changed: {ordered} of {len(fp32_tops)} questions in order, {as_sets} as sets")
    lines.append(f"load average at the end: {load_average()}")
    return lines


if __name__ == "__main__":
    main()
