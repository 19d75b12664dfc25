"""Erasing a person leaves nothing of what was held about them: not in any table, vector, Redis key or task.

A unique marker is planted in every memory about one person: what an agent
learned in a DM with them, a fact kept for them alone from a group channel,
their own note, a correction of one of those, what consolidation learned from
their messages in a thread (including a channel fact derived from their words, and
an answer's link to her question as its context), and the injection records that
quoted all of these. It is planted too in what
names them: their display name and first and last name, the source ref, label
and run id of a row about them, messages posted under their handle before they
had a record (and what was learned and kept of those), and a question asked in
a DM with them that an agent named for the first time in that turn. Rows are
committed, their embedding tasks go through the real Redis broker, and a
worker-equivalent call embeds them through an OpenAI-compatible stand-in on loopback.

Then an owner erases the person through the API, and the marker is searched for:
- in every column of every table the database's catalogue lists, whatever its
  type, save those that cannot hold text (numbers, times, ids, booleans), so a
  column added later is searched without this test changing (and in the decoded
  sessions); the marker is found there first, in each place it was planted;
- among the vectors: nearest neighbours of the marker's embedding, and of each
  erased row's former vector, find none of the erased rows and no copy of a vector;
- in Redis: every key and every value, kombu's base64 message bodies decoded;
- in the task queues.

Zero hits, and the answer carries a receipt per row and counts per store.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest
import redis
from django.conf import settings as django_settings
from django.contrib.sessions.models import Session
from django.db import connection
from django.db.models import Q
from pgvector.django import CosineDistance
from rest_framework.test import APIClient

from accounts.models import Membership
from accounts.services import agent_create
from memories.embeddings.writes import memory_embed
from memories.models import Memory
from memories.tests.loopback import EmbeddingsStandIn, hashed_vector
from threads.consolidation import thread_consolidate
from threads.models import EpisodePart, Thread, ThreadEvent

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MARKER = "zqxv7marker"  # one token, so it also shows in tsvector columns as itself
CONTROL = "kpjw3control"  # in memories about someone else: these must survive
# Column types that cannot hold a marker; every other column (text, JSON, arrays, tsvector, vectors, types
# added later) is searched as text.
UNSEARCHED_TYPES = (
    "smallint",
    "integer",
    "bigint",
    "numeric",
    "real",
    "double precision",
    "boolean",
    "uuid",
    "date",
    "timestamp with time zone",
    "timestamp without time zone",
    "interval",
)


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def tables_holding(text: str) -> dict[str, int]:
    """Rows per table.column whose value contains `text`, over every column of every table that can hold text."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.table_name, c.column_name FROM information_schema.columns c"
            " JOIN information_schema.tables t USING (table_schema, table_name)"
            " WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND NOT c.data_type = ANY(%s)",
            [list(UNSEARCHED_TYPES)],
        )
        columns = cursor.fetchall()
        hits = {}
        for table, column in columns:
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s', [f"%{text}%"])
            count = cursor.fetchone()[0]
            if count:
                hits[f"{table}.{column}"] = count
    assert len(columns) > 50  # every app's tables were searched, not a handful
    sessions = sum(text in json.dumps(session.get_decoded()) for session in Session.objects.all())
    if sessions:
        hits["django_session (decoded)"] = sessions
    return hits


def _decoded(value: bytes) -> list[bytes]:
    """A Redis value, plus the payloads kombu wraps in JSON with a base64 body."""
    found = [value]
    try:
        envelope = json.loads(value)
    except ValueError:
        return found
    if isinstance(envelope, dict) and isinstance(envelope.get("body"), str):
        try:
            found.append(base64.b64decode(envelope["body"]))
        except ValueError:
            found.append(envelope["body"].encode())
    return found


def redis_holding(client: redis.Redis, text: str) -> list[str]:
    """Every key and every value in Redis (strings, lists, hashes, sets, sorted sets) that contains `text`."""
    needle = text.encode().lower()
    hits = []
    for key in client.scan_iter(count=1000):
        kind = client.type(key).decode()
        if kind == "string":
            values = [client.get(key)]
        elif kind == "list":
            values = client.lrange(key, 0, -1)
        elif kind == "hash":
            values = [item for pair in client.hgetall(key).items() for item in pair]
        elif kind == "set":
            values = list(client.smembers(key))
        elif kind == "zset":
            values = [member for member, _ in client.zrange(key, 0, -1, withscores=True)]
        else:
            values = []
        if needle in key.lower() or any(
            needle in payload.lower() for value in values if value for payload in _decoded(value)
        ):
            hits.append(key.decode())
    return hits


def queued_tasks(client: redis.Redis) -> list[dict]:
    """The messages waiting in the task queues, decoded."""
    messages = []
    for queue in ("embed", "consolidate", "maintenance"):
        for raw in client.lrange(queue, 0, -1):
            envelope = json.loads(raw)
            messages.append({"queue": queue, "headers": envelope["headers"], "body": _decoded(raw)[-1]})
    return messages


@pytest.fixture
def broker():
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture
def stand_in(settings):
    with EmbeddingsStandIn() as server:
        settings.EMBEDDER = "openai"
        settings.EMBEDDER_OPENAI_BASE_URL = server.base_url
        settings.EMBEDDER_OPENAI_MODEL = "stand-in"
        yield server


def test_erasing_a_person_leaves_no_trace_of_them_anywhere(
    org, owner, member, second_member, broker, stand_in, settings
):
    settings.MEMORY_API_RATE = "100000/min"
    agent, token = agent_create(organisation=org, name="helper")
    api = bearer(token)
    dm = {"channel": "D-mona", "kind": "dm", "people": [member.username]}
    team = {"channel": "G-team", "kind": "private", "people": [member.username, second_member.username]}
    dm_max = {"channel": "D-max", "kind": "dm", "people": [second_member.username]}

    def remember(client, place, body, **extra):
        response = client.post("/api/v1/memories", {"body": body, "place": place, **extra}, format="json")
        assert response.status_code == 201, response.content
        return response.json()["id"]

    # What is held about mona, each with the marker.
    learned = remember(api, dm, f"Her locker code is {MARKER}-1")
    kept_for_her = remember(api, team, f"Mona asked to keep {MARKER}-2 private", only_for=member.username)
    mona = APIClient()
    mona.force_login(member)
    her_note = remember(mona, dm, f"My own note about {MARKER}-3")
    corrected = api.post(
        f"/api/v1/memories/{learned}/supersede", {"body": f"Her locker code is {MARKER}-4", "place": dm}, format="json"
    )
    assert corrected.status_code == 201
    # What names her: her names, and where a row about her came from.
    Membership.objects.filter(user=member).update(display_name=f"Mona {MARKER}")
    member.first_name, member.last_name = "Mona", f"{MARKER}-surname"
    member.save(update_fields=["first_name", "last_name"])
    sourced = remember(
        api,
        dm,
        "Her desk is by the window",
        source_ref=f"msg-{MARKER}",
        source_label=f"Told by {MARKER}",
        run_id=f"run-{MARKER}",
    )
    # Her words in threads, and what consolidation learned from them: a person fact and a channel fact; and
    # a message posted under a handle before it was hers (an integration links it to her record below).
    for thread_id, place, text, author in (
        ("T-dm", dm, f"I prefer {MARKER} tea", member.username),
        ("T-team", team, f"Remember that the {MARKER} release is on Monday", member.username),
        ("T-early", team, f"Remember that the {MARKER} badge office opens at nine", "U-mona"),
    ):
        event = {"id": f"{thread_id}-1", "role": "user", "author": author, "text": text}
        event.update({"time": datetime(2026, 11, 30, 9, tzinfo=UTC).isoformat(), "place": place})
        ingested = api.post(f"/api/v1/threads/{thread_id}/events", {"events": [event]}, format="json")
        assert ingested.status_code in (200, 201), ingested.content
        thread_consolidate(thread_id=Thread.objects.get(external_id=thread_id).pk)
    # The agent's answer in the team thread: its episode links to her question (its context), without her words.
    reply = {"id": "T-team-2", "role": "assistant", "author": "helper", "text": "Noted, Monday it is."}
    reply.update({"time": datetime(2026, 11, 30, 9, 1, tzinfo=UTC).isoformat(), "place": team})
    assert api.post("/api/v1/threads/T-team/events", {"events": [reply]}, format="json").status_code == 201
    thread_consolidate(thread_id=Thread.objects.get(external_id="T-team").pk)
    answer_part = EpisodePart.objects.get(memory__source_event__external_id="T-team-2")
    assert answer_part.context is not None and MARKER in answer_part.context.body  # positive control: linked
    Membership.objects.filter(user=member).update(handle="U-mona")
    derived = list(Memory.objects.filter(learning__isnull=False, body__icontains=MARKER))
    assert any(row.scope == "channel" for row in derived)
    # What others are owed: about max, and the workspace.
    control = remember(api, dm_max, f"Max likes {CONTROL}")

    # Injection records quoting them, and every row embedded as a worker would. The questions repeat the
    # marker: one in a DM with her, one in a DM with her an agent names for the first time in that turn
    # (nothing about her shown there), one in a channel that showed a fact about her; max's turn is the control.
    dm_named_now = {"channel": "D-mona-2", "kind": "dm", "people": [member.username]}
    for turn, place, question in (
        ("turn-dm", dm, ""),
        ("turn-team", team, ""),
        ("turn-dm-asked", dm, f"What is the {MARKER} code?"),
        ("turn-dm-named-now-asked", dm_named_now, f"Did {MARKER} arrive?"),
        ("turn-team-asked", team, f"When is the {MARKER} release?"),
        ("turn-max-asked", dm_max, f"What does Max like, {CONTROL}?"),
    ):
        body = {"turn_id": turn, "place": place, "question": question}
        assert api.post("/api/v1/render", body, format="json").status_code == 200
    all_ids = [str(pk) for pk in Memory.objects.values_list("pk", flat=True)]
    assert not memory_embed(ids=all_ids).failed
    about_her = [row for row in Memory.objects.all() if MARKER in row.body]
    former_vectors = {str(row.pk): list(row.embedding) for row in about_her}
    assert {learned, kept_for_her, her_note, corrected.json()["id"]} <= set(former_vectors)
    assert len(former_vectors) >= 6

    before = tables_holding(MARKER)
    assert {
        "memories_memory.body",
        "memories_memory.search_vector",
        "memories_injectionline.line",
        "threads_threadevent.text",
        "memories_injection.question",
        "memories_memory.source_ref",
        "memories_memory.source_label",
        "memories_memory.source_run_id",
        "accounts_membership.display_name",
        "accounts_user.last_name",
    } <= set(before), before
    assert before["memories_injection.question"] == 3
    assert before["threads_threadevent.text"] == 3
    assert any(task["queue"] == "embed" for task in queued_tasks(broker))  # the queue was really used

    owner_api = APIClient()
    owner_api.force_login(owner)
    # The subject-access export holds everything the erasure will reach: her thread events too.
    exported = mona.get(f"/api/v1/subjects/user/{member.pk}/memories").json()  # her own subject-access request
    assert {event["text"] for event in exported["thread_events"]} == {
        f"I prefer {MARKER} tea",
        f"Remember that the {MARKER} release is on Monday",
        f"Remember that the {MARKER} badge office opens at nine",
    }
    response = owner_api.post(
        f"/api/v1/subjects/user/{member.pk}/erase", {"reason": "Erasure request #12"}, format="json"
    )
    assert response.status_code == 200, response.content
    receipt = response.json()

    # Nothing left in the database.
    assert tables_holding(MARKER) == {}
    # No episode part of an erased episode, and no link to one: the answer's part stays, linked to nothing.
    erased_parts = EpisodePart.objects.filter(organisation=org).filter(
        Q(memory__redacted_at__isnull=False) | Q(context__redacted_at__isnull=False)
    )
    assert not erased_parts.exists()
    answer_part.refresh_from_db()
    assert answer_part.context_id is None and answer_part.memory.redacted_at is None
    # Nothing among the vectors: no erased row has one, and no copy of one survives elsewhere.
    marker_vector = hashed_vector(MARKER)
    rows = Memory.objects.filter(organisation=org, embedding__isnull=False)
    nearest = set(
        rows.annotate(d=CosineDistance("embedding", marker_vector)).order_by("d").values_list("pk", flat=True)[:50]
    )
    assert not {str(pk) for pk in nearest} & set(former_vectors)
    for row_id, vector in former_vectors.items():
        closest = rows.annotate(d=CosineDistance("embedding", vector)).order_by("d").values_list("pk", "d").first()
        assert closest is None or (str(closest[0]) not in former_vectors and closest[1] > 1e-6), (row_id, closest)
    assert not Memory.objects.filter(pk__in=former_vectors, embedding__isnull=False).exists()
    # Nothing in Redis or the task queues.
    assert redis_holding(broker, MARKER) == []
    assert not [task for task in queued_tasks(broker) if MARKER.encode() in task["body"]]

    # One receipt per row, and what was done in each store.
    assert {item["id"] for item in receipt["receipts"]} >= {
        learned,
        kept_for_her,
        her_note,
        corrected.json()["id"],
        sourced,
    }
    assert all(item["erased_at"] and item["reason"] == "Erasure request #12" for item in receipt["receipts"])
    stores = receipt["stores"]
    assert stores["memories"] == len(receipt["receipts"])
    assert stores["vectors"] >= len(former_vectors) - len(derived)
    assert stores["injection_lines"] >= 2
    assert stores["thread_events"] == 3
    assert stores["derived_memories"] >= 1
    assert stores["injection_questions"] >= 3
    assert stores["provenance"] >= 1 and stores["names"] == 2
    # What stays: her ids and handles, and who wrote what, of which kind, when.
    her = Membership.objects.select_related("user").get(user=member)
    assert (her.handle, her.user.username) == ("U-mona", "mona")
    assert set(ThreadEvent.objects.filter(author="U-mona").values_list("author_user_id", "role")) == {
        (member.pk, "user")
    }
    assert Memory.objects.get(pk=sourced).source_kind and Memory.objects.get(pk=sourced).created_at
    # And what is owed to others is still there.
    assert Memory.objects.get(pk=control).body == f"Max likes {CONTROL}"
    assert {"memories_memory.body", "memories_injection.question"} <= set(tables_holding(CONTROL))
