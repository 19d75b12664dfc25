"""Recall on long chats (BEAM), posted as thread events into each chat's user's DM, through the real stack.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/beam.py --data ../shared/data/beam-dev --chats 1,2 [--against main]

BEAM ("Beyond a Million Tokens", ICLR 2026) chats run between a person and an assistant over months; each
question names the messages that hold its answer (`source_chat_ids`), so retrieval is scored without a model.
For each chat folder (`chat.json`, `probing_questions.json`):

1. the run command (`bench/stack.py`) starts in its own data folder; one organisation per chat with an agent
   and a member, the chat's user, made with the management commands;
2. every message becomes one event in the user's DM (`POST /api/v1/threads/beam-<chat>/events`): role and
   text as in the chat, author the user or `assistant`, time the batch's date (`time_anchor`), id the message's
   id; a message over the event limit is posted as consecutive events `<id>.1`, `<id>.2` cut between
   paragraphs or sentences, as the API documents; requests of up to 100 events and 1.8 MB;
3. the worker's consolidation is awaited: a chat is *recallable* when its thread's watermark has reached its
   last event and no live memory of its organisation waits for its embedding; the *lag* is the time from
   that chat's last event posted (its answer received) to then;
4. each question with sources (abstention has none) is asked in the DM through `POST /api/v1/recall`
   (limit 10, the default mode); a result comes from the messages its source names (an episode: its event's
   id; a learned fact: the sequences in `thread:<pk>#...`); a hit at k when one of the first k comes from one
   of the question's source messages. Latency is the whole HTTP call, after consolidation has finished.

`--against REV` serves REV (exported beside the data, sharing the virtualenv) from a stack of its own, loads
both at once, and asks each question of both in turn (alternating which goes first), so load weighs on both
alike. `--keep DIR` leaves the loaded stacks in DIR; `--reuse DIR` asks again without posting. Answers (per
question: ranked refs, messages, hit) go to var/bench-beam/answers.json.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness import exported_checkout  # noqa: E402 - after the path is set
from quality import percentile, warm_up_event  # noqa: E402
from stack import free_port, manage, reset, start_stack, stop_stack  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "beam-dev"
OUT = ROOT / "var" / "bench-beam"
ABILITIES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
EVENT_MAX_CHARS = 100_000  # the API's default THREAD_EVENT_MAX_CHARS
REQUEST_MAX_EVENTS = 100
REQUEST_MAX_BYTES = 1_800_000  # under the events endpoint's 2 MiB, with room for the envelope
RESULTS = 10


def say(message: str) -> None:
    print("[beam]", message, flush=True)


# --- Data: BEAM's layout --------------------------------------------------------------


@dataclass
class Message:
    id: int
    role: str
    content: str
    date: datetime


@dataclass
class BeamQuestion:
    ability: str
    number: int
    text: str
    sources: frozenset[int]


@dataclass
class Chat:
    name: str
    messages: list[Message]
    questions: list[BeamQuestion]

    @property
    def user(self) -> str:
        return f"beam-{self.name}"

    @property
    def thread(self) -> str:
        return f"beam-{self.name}"

    @property
    def place(self) -> dict:
        return {"channel": f"D-{self.user}", "kind": "dm", "people": [self.user]}


def is_beam_folder(folder: Path) -> bool:
    """A folder in BEAM's layout: chat folders, each with its chat.json."""
    return folder.is_dir() and any((sub / "chat.json").is_file() for sub in folder.iterdir())


def anchor_date(text: str) -> datetime:
    """BEAM's `time_anchor` ("March-15-2024"), read as midnight UTC."""
    return datetime.strptime(text.strip(), "%B-%d-%Y").replace(tzinfo=UTC)


def source_ids(value) -> frozenset[int]:
    """Every message id in `source_chat_ids`: a list, a dict of lists, nested lists, or any of them as a literal."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return source_ids(ast.literal_eval(value)) if value.strip() else frozenset()
    if isinstance(value, dict):
        return frozenset().union(*(source_ids(item) for item in value.values()))
    if isinstance(value, list | tuple | set):
        return frozenset().union(*(source_ids(item) for item in value))
    return frozenset({int(value)})


def chat_messages(batches: list[dict]) -> list[Message]:
    """The chat's messages in order, each dated by its batch's anchor (the last one seen when a batch has none)."""
    messages: list[Message] = []
    date = None
    for batch in batches:
        turns = [message for turn in batch["turns"] for message in turn]
        anchor = batch.get("time_anchor") or next((m["time_anchor"] for m in turns if m.get("time_anchor")), None)
        if anchor:
            date = anchor_date(anchor)
        if date is None:
            raise ValueError(f"batch {batch.get('batch_number')} has no time_anchor and none came before it")
        messages += [Message(int(m["id"]), m["role"], m["content"], date) for m in turns]
    return messages


def load_chat(folder: Path) -> Chat:
    messages = chat_messages(json.loads((folder / "chat.json").read_text()))
    probing = json.loads((folder / "probing_questions.json").read_text())
    questions = [
        BeamQuestion(ability, number, item["question"], source_ids(item.get("source_chat_ids")))
        for ability in ABILITIES
        for number, item in enumerate(probing.get(ability, []))
    ]
    return Chat(folder.name, messages, questions)


def load_chats(folder: Path, names: list[str] | None = None) -> list[Chat]:
    found = sorted((sub for sub in folder.iterdir() if (sub / "chat.json").is_file()), key=lambda p: p.name.zfill(8))
    if names:
        missing = set(names) - {sub.name for sub in found}
        if missing:
            raise SystemExit(f"--chats: no chat folder {', '.join(sorted(missing))} in {folder}")
        found = [sub for sub in found if sub.name in names]
    return [load_chat(sub) for sub in found]


# --- Events --------------------------------------------------------------------------


def split_text(text: str, limit: int = EVENT_MAX_CHARS) -> list[str]:
    """`text` in parts of at most `limit` characters, cut after a paragraph, else a line or a sentence, else hard.

    The parts joined are the text again."""
    parts = []
    while len(text) > limit:
        window = text[:limit]
        cut = window.rfind("\n\n") + 2
        if cut < limit // 2:
            cut = max(window.rfind("\n"), window.rfind(". ")) + 1
        if cut < limit // 2:
            cut = limit
        parts.append(text[:cut])
        text = text[cut:]
    return [*parts, text]


def chat_events(chat: Chat, limit: int = EVENT_MAX_CHARS) -> list[dict]:
    """One event per message; a longer message as consecutive events `<id>.1`, `<id>.2`... of the same time."""
    events = []
    for message in chat.messages:
        if not message.content.strip():
            continue
        parts = split_text(message.content, limit)
        for number, part in enumerate(parts, start=1):
            events.append(
                {
                    "id": str(message.id) if len(parts) == 1 else f"{message.id}.{number}",
                    "role": message.role,
                    "author": chat.user if message.role == "user" else "assistant",
                    "text": part,
                    "time": message.date.isoformat(),
                    "place": chat.place,
                }
            )
    return events


def request_batches(
    events: list[dict], max_events: int = REQUEST_MAX_EVENTS, max_bytes: int = REQUEST_MAX_BYTES
) -> list[list[dict]]:
    """The events in order, in requests of at most `max_events` events and about `max_bytes` bytes of JSON."""
    batches: list[list[dict]] = [[]]
    size = 0
    for event in events:
        weight = len(json.dumps(event)) + 2
        if batches[-1] and (len(batches[-1]) >= max_events or size + weight > max_bytes):
            batches.append([])
            size = 0
        batches[-1].append(event)
        size += weight
    return [batch for batch in batches if batch]


def message_of(event_id: str) -> int | None:
    """The message an event id of this bench belongs to: `17` and `17.2` are message 17."""
    found = re.fullmatch(r"(\d+)(?:\.\d+)?", event_id)
    return int(found[1]) if found else None


_FACT_REF = re.compile(r"thread:\d+#([\d,-]+)")


def messages_of(ref: str, event_ids: dict[int, str]) -> set[int]:
    """The messages a result was taken from: an episode's ref is its event's id; a learned fact's ref names its
    events' sequences in the thread (`thread:<pk>#3,5`, or `#3-9` when the list was too long)."""
    fact = _FACT_REF.fullmatch(ref)
    if not fact:
        found = message_of(ref)
        return set() if found is None else {found}
    sequences: list[int] = []
    for piece in fact[1].split(","):
        first, _, last = piece.partition("-")
        sequences += range(int(first), int(last or first) + 1)
    return {m for s in sequences if s in event_ids and (m := message_of(event_ids[s])) is not None}


# --- Scoring -------------------------------------------------------------------------


def hits(found: list[set[int]], sources: frozenset[int]) -> tuple[bool, bool]:
    """(hit@5, hit@10): one of the first 5 (10) results comes from one of the source messages."""
    matched = [bool(messages & sources) for messages in found[:RESULTS]]
    return any(matched[:5]), any(matched)


@dataclass
class Tally:
    """hit@5 and hit@10 per ability and overall, and recall latencies in ms."""

    counts: dict = field(default_factory=dict)  # ability -> [hit@5, hit@10, questions]
    latency: list = field(default_factory=list)

    def add(self, ability: str, at5: bool, at10: bool) -> None:
        for key in (ability, "all"):
            row = self.counts.setdefault(key, [0, 0, 0])
            row[0] += at5
            row[1] += at10
            row[2] += 1

    def rates(self, key: str = "all") -> tuple[float, float, int]:
        at5, at10, n = self.counts.get(key, (0, 0, 0))
        return (at5 / n, at10 / n, n) if n else (float("nan"), float("nan"), 0)


# --- The stacks ----------------------------------------------------------------------

TENANTS_SCRIPT = """
import io, json
from django.core.management import call_command
from accounts.models import Organisation
out = {}
for name in NAMES:
    slug = "beam-" + name
    call_command("create_org", slug, name="BEAM chat " + name, stdout=io.StringIO())
    call_command("create_user", slug, org=slug, role="member", stdout=io.StringIO())
    text = io.StringIO()
    call_command("create_agent", "bench-agent", org=slug, stdout=text)
    token = text.getvalue().strip().splitlines()[-1]
    out[name] = {"organisation": str(Organisation.objects.get(slug=slug).pk), "token": token, "events": {}}
print(json.dumps(out))
"""


@dataclass
class Side:
    """One revision's stack, the tenants loaded into it and its answers."""

    label: str
    root: Path
    data_dir: Path
    port: int = 0
    process: object = None
    tenants: dict = field(default_factory=dict)  # chat -> organisation, token, events {sequence: id}, times
    tally: Tally = field(default_factory=Tally)
    answers: list = field(default_factory=list)
    session: requests.Session = field(default_factory=requests.Session)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.port = free_port()
        say(f"{self.label}: starting Archivist from {self.root} on 127.0.0.1:{self.port} ({self.data_dir})")
        self.process = start_stack(self.data_dir, self.port, self.root)

    def stop(self) -> None:
        if self.process is not None:
            stop_stack(self.process)

    def post(self, chat: Chat, path: str, body: dict, timeout: float = 300) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.tenants[chat.name]['token']}"}
        return self.session.post(f"{self.base}/api/v1/{path}", json=body, headers=headers, timeout=timeout)

    def database(self):
        """A connection to this stack's PostgreSQL, for the consolidation watch (read only)."""
        import psycopg

        from config.embedded import running_postgres_url  # the module alone: it loads no settings

        url = running_postgres_url(self.data_dir / "pg")
        if url is None:
            raise SystemExit(f"no PostgreSQL running in {self.data_dir / 'pg'}")
        return psycopg.connect(url.replace("postgres://", "postgresql://"), autocommit=True)


def create_tenants(side: Side, chats: list[Chat]) -> None:
    """An organisation per chat with its user (a member) and the bench's agent, through the management commands."""
    script = f"NAMES = {json.dumps([chat.name for chat in chats])}\n" + TENANTS_SCRIPT
    side.tenants = json.loads(manage(side.root, side.data_dir, script).strip().splitlines()[-1])


def post_chat(side: Side, chat: Chat) -> list[str]:
    """Post the chat's events in order; keep each event's sequence, and when the last answer came."""
    tenant = side.tenants[chat.name]
    events = chat_events(chat)
    batches = request_batches(events)
    refused, sent = [], 0
    for number, batch in enumerate(batches, start=1):
        response = side.post(chat, f"threads/{chat.thread}/events", {"events": batch})
        sent += len(batch)
        if response.status_code not in (200, 201):
            refused.append(f"chat {chat.name} request {number}: {response.status_code} {response.text[:300]}")
            continue
        answer = response.json()
        tenant["events"].update({int(item["sequence"]): item["id"] for item in answer["events"]})
        refused += [f"chat {chat.name}: {json.dumps(item)[:300]}" for item in answer.get("refusals", [])]
        if number % 5 == 0 or number == len(batches):
            say(
                f"{side.label}: chat {chat.name}: {sent}/{len(events)} events posted ({number}/{len(batches)} requests)"
            )
    tenant["last_post"] = time.time()
    tenant["posted_events"] = len(events)
    return refused


def warm_up_worker(side: Side, chat: Chat) -> None:
    """One event in a private place, consolidated before timing: the worker loads the model on its first task."""
    side.post(chat, "threads/warm-up/events", {"events": [warm_up_event()]}).raise_for_status()
    organisation = side.tenants[chat.name]["organisation"]
    with side.database() as connection:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if backlog(connection, organisation, "warm-up") == (0, 0):
                return
            time.sleep(0.5)
    raise SystemExit(f"{side.label}: the worker did not consolidate the warm-up event in 10 minutes")


def backlog(connection, organisation: str, thread: str) -> tuple[int, int] | None:
    """(events not consolidated, live episodes not embedded) of a thread's organisation; None before the thread."""
    row = connection.execute(
        "SELECT last_sequence - consolidated_through FROM threads_thread WHERE organisation_id = %s"
        " AND external_id = %s",
        [organisation, thread],
    ).fetchone()
    if row is None:
        return None
    waiting = connection.execute(
        "SELECT count(*) FROM memories_memory WHERE organisation_id = %s AND source_kind = 'episode'"
        " AND embedding IS NULL AND redacted_at IS NULL",
        [organisation],
    ).fetchone()[0]
    return int(row[0]), int(waiting)


def kept(connection, organisation: str) -> tuple[int, int]:
    """(live episodes, live learned facts) of an organisation."""
    rows = dict(
        connection.execute(
            "SELECT source_kind, count(*) FROM memories_memory WHERE organisation_id = %s AND redacted_at IS NULL"
            " AND source_kind IN ('episode', 'thread_event') GROUP BY source_kind",
            [organisation],
        ).fetchall()
    )
    return rows.get("episode", 0), rows.get("thread_event", 0)


def wait_recallable(sides: list[Side], chats: list[Chat], timeout: float = 7200) -> None:
    """Until every chat is recallable on every side; each chat's lag is from its own last event posted."""
    connections = {side.label: side.database() for side in sides}
    started = last_said = time.monotonic()
    pending = {(side.label, chat.name): (side, chat) for side in sides for chat in chats}
    try:
        while pending:
            states = {}
            for key, (side, chat) in list(pending.items()):
                state = backlog(connections[side.label], side.tenants[chat.name]["organisation"], chat.thread)
                if state == (0, 0):
                    tenant = side.tenants[chat.name]
                    tenant["lag"] = time.time() - tenant["last_post"]
                    tenant["kept"] = kept(connections[side.label], tenant["organisation"])
                    say(
                        f"{side.label}: chat {chat.name} recallable {tenant['lag']:.1f} s after its last event "
                        "({} episodes, {} learned facts)".format(*tenant["kept"])
                    )
                    del pending[key]
                states[key] = state
            if time.monotonic() - started > timeout:
                raise SystemExit(f"not recallable after {timeout:.0f} s: {states}")
            if pending and time.monotonic() - last_said > 15:
                say("waiting for the worker: " + "; ".join(
                    f"{label} chat {name}: " + ("no thread yet" if states[(label, name)] is None else
                    "{} events not consolidated, {} episodes not embedded".format(*states[(label, name)]))
                    for label, name in pending
                ))  # fmt: skip
                last_said = time.monotonic()
            time.sleep(1)
    finally:
        for connection in connections.values():
            connection.close()


def load(sides: list[Side], chats: list[Chat]) -> list[str]:
    """Tenants, the worker warmed, every chat posted (the sides at once), then consolidation awaited."""

    def one_side(side: Side) -> list[str]:
        create_tenants(side, chats)
        warm_up_worker(side, chats[0])
        refused = []
        for chat in chats:
            refused += post_chat(side, chat)
        return refused

    with ThreadPoolExecutor(max_workers=len(sides)) as pool:
        refused = [problem for problems in pool.map(one_side, sides) for problem in problems]
    for problem in refused[:10]:
        say(f"refused: {problem}")
    wait_recallable(sides, chats)
    return refused


# --- Asking --------------------------------------------------------------------------


def ask(side: Side, chat: Chat, question: BeamQuestion, record: bool = True) -> None:
    """Recall in the chat's DM; score the ranked results by the messages they come from."""
    started = time.perf_counter()
    response = side.post(chat, "recall", {"question": question.text, "place": chat.place, "limit": RESULTS}, 120)
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise SystemExit(f"{side.label}: recall answered {response.status_code}: {response.text[:300]}")
    if not record:
        return
    events = side.tenants[chat.name]["events"]
    refs = [row["source"]["ref"] for row in response.json()["results"]]
    found = [messages_of(ref, events) for ref in refs]
    at5, at10 = hits(found, question.sources)
    side.tally.add(question.ability, at5, at10)
    side.tally.latency.append(elapsed)
    side.answers.append(
        {
            "chat": chat.name,
            "ability": question.ability,
            "number": question.number,
            "question": question.text,
            "sources": sorted(question.sources),
            "refs": refs,
            "messages": [sorted(messages) for messages in found],
            "hit@5": at5,
            "hit@10": at10,
            "ms": round(elapsed, 2),
            # The server's own share: embed, sql, rank, recall (ms).
            "server": dict(re.findall(r"(\w+);dur=([\d.]+)", response.headers.get("Server-Timing", ""))),
        }
    )


def ask_all(sides: list[Side], chats: list[Chat]) -> None:
    """Every question with sources, asked of each side in turn, which side goes first alternating."""
    scored = [(chat, q) for chat in chats for q in chat.questions if q.sources]
    for side in sides:  # every web worker loads the model on its first question: not timed
        for chat, question in scored[:6]:
            ask(side, chat, question, record=False)
    for number, (chat, question) in enumerate(scored):
        for side in sides[number % 2 :] + sides[: number % 2]:
            ask(side, chat, question)
        if (number + 1) % 10 == 0 or number + 1 == len(scored):
            say(f"asked {number + 1}/{len(scored)} questions")


# --- Report --------------------------------------------------------------------------


def rate(value: float) -> str:
    return "–" if value != value else f"{value:.3f}"


def per_ability_table(sides: list[Side]) -> list[str]:
    """hit@5 and hit@10 per ability and overall, a column pair per side, and the first side's gain over the others."""
    head = "| ability | questions | " + " | ".join(f"{s.label} hit@5 | {s.label} hit@10" for s in sides)
    rule = "| --- | ---: | " + " | ".join("---: | ---:" for _ in sides)
    if len(sides) > 1:
        head += " | " + " | ".join(f"Δ hit@5 vs {s.label} | Δ hit@10 vs {s.label}" for s in sides[1:])
        rule += " | " + " | ".join("---: | ---:" for _ in sides[1:])
    lines = [head + " |", rule + " |"]
    keys = [a for a in ABILITIES if a in sides[0].tally.counts] + ["all"]
    for key in keys:
        first = sides[0].tally.rates(key)
        cells = [f"{rate(s.tally.rates(key)[0])} | {rate(s.tally.rates(key)[1])}" for s in sides]
        cells += [
            f"{first[0] - s.tally.rates(key)[0]:+.3f} | {first[1] - s.tally.rates(key)[1]:+.3f}" for s in sides[1:]
        ]
        name = "**overall**" if key == "all" else key.replace("_", " ")
        lines.append(f"| {name} | {first[2]} | " + " | ".join(cells) + " |")
    return lines


def figures_table(sides: list[Side], chats: list[Chat]) -> list[str]:
    lines = [
        "| figure | " + " | ".join(s.label for s in sides) + " |",
        "| --- | " + " | ".join("---:" for _ in sides) + " |",
    ]
    lat = [s.tally.latency for s in sides]
    lines.append("| recall p50 / p95 ms | " + " | ".join(
        f"{percentile(v, 0.5):.1f} / {percentile(v, 0.95):.1f}" for v in lat) + " |")  # fmt: skip
    for chat in chats:
        lines.append(f"| chat {chat.name}: last event posted → recallable, s | " + " | ".join(
            f"{s.tenants[chat.name].get('lag', float('nan')):.1f}" for s in sides) + " |")  # fmt: skip
    lines.append("| episodes / learned facts kept | " + " | ".join(
        "{} / {}".format(*(sum(s.tenants[c.name].get("kept", (0, 0))[i] for c in chats) for i in (0, 1)))
        for s in sides) + " |")  # fmt: skip
    lines.append("| slowest chat's lag, s | " + " | ".join(
        f"{max(s.tenants[c.name].get('lag', float('nan')) for c in chats):.1f}" for s in sides) + " |")  # fmt: skip
    return lines


def report(sides: list[Side], chats: list[Chat], wall: float, refused: int) -> str:
    messages = sum(len(chat.messages) for chat in chats)
    events = sum(len(chat_events(chat)) for chat in chats)
    chars = sum(len(m.content) for chat in chats for m in chat.messages)
    unscored = sum(1 for chat in chats for q in chat.questions if not q.sources)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    lines = [
        f"Data: BEAM chats {', '.join(chat.name for chat in chats)}: {messages} messages as {events} events "
        f"({chars:,} characters, {refused} refused), {sides[0].tally.rates()[2]} questions with sources "
        f"({unscored} without, abstention, left out). Run on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} cores, load average {load}, {wall / 60:.1f} min in all.",
        "",
        *per_ability_table(sides),
        "",
        *figures_table(sides, chats),
    ]
    return "\n".join(lines)


# --- Main ----------------------------------------------------------------------------


def run(
    data: Path, chat_names: list[str] | None, against: str | None, keep: Path | None = None, reuse: Path | None = None
) -> str:
    """Load (or reuse), ask, and report; the report's text is returned and printed."""
    started = time.monotonic()
    chats = load_chats(data, chat_names)
    folder = (reuse or keep or OUT / "run").resolve()
    sides = [Side("this", ROOT, folder / "this")]
    if against:
        sides.append(Side(against, exported_checkout(OUT, against), folder / "against"))
    state_file = folder / "state.json"
    if reuse:
        state = json.loads(state_file.read_text())
        if state["chats"] != [chat.name for chat in chats] or state["against"] != against:
            raise SystemExit(f"--reuse: {folder} holds chats {state['chats']} against {state['against']}")
        for side in sides:
            side.tenants = state["tenants"][side.label]
            for tenant in side.tenants.values():
                tenant["events"] = {int(k): v for k, v in tenant["events"].items()}
    else:
        for side in sides:
            reset(side.data_dir)
    refused: list[str] = []
    try:
        with ThreadPoolExecutor(max_workers=len(sides)) as pool:
            list(pool.map(Side.start, sides))
        if not reuse:
            refused = load(sides, chats)
            state = {
                "chats": [c.name for c in chats],
                "against": against,
                "tenants": {s.label: s.tenants for s in sides},
            }
            state_file.write_text(json.dumps(state))
        say("all chats recallable; asking the questions")
        ask_all(sides, chats)
    finally:
        say("stopping the stacks")
        for side in sides:
            side.stop()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "answers.json").write_text(json.dumps({side.label: side.answers for side in sides}, indent=1))
    say(f"answers written to {(OUT / 'answers.json').relative_to(ROOT)}")
    text = report(sides, chats, time.monotonic() - started, len(refused))
    print()
    print(text)
    return text


def chat_list(text: str | None) -> list[str] | None:
    return [name.strip() for name in text.split(",") if name.strip()] if text else None


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a folder in BEAM's layout")
    parser.add_argument("--chats", help="chat folders to load, e.g. 1,2 (default: all)")
    parser.add_argument("--against", metavar="REV", help="also serve REV (e.g. main) and ask it the same questions")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--keep", type=Path, metavar="DIR", help="load into DIR and keep it for --reuse")
    group.add_argument("--reuse", type=Path, metavar="DIR", help="ask again in the stacks a --keep run left in DIR")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    if not is_beam_folder(args.data):
        raise SystemExit(f"--data: {args.data} is not a folder of BEAM chats (<n>/chat.json)")
    run(args.data, chat_list(args.chats), args.against, args.keep, args.reuse)


if __name__ == "__main__":
    main()
