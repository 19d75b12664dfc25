"""POST /api/v1/memories/batch writes the rows it keeps in one insert; when the database refuses that insert
(a trigger or CHECK Python does not know), it writes item by item, each in its own savepoint, and says so.
An unexpected error writes nothing at all."""

from __future__ import annotations

import logging

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import IdempotencyKey, Memory, MemoryAudit
from threads.models import Learning

REFUSED_BODY = "Refused by the database alone"
BREAKING_BODY = "Breaks the server"
FALLBACK = "writing each in its own savepoint"


@pytest.fixture
def database_rules(db):
    """Two rules only PostgreSQL knows, as a real trigger: one refuses a row (a CHECK's SQLSTATE), one fails
    unexpectedly (a plain exception, which no API answer explains)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION pg_temp.batch_rules() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            f" IF NEW.body = '{REFUSED_BODY}' THEN"
            "   RAISE EXCEPTION 'memories_test_only_rule: this body is refused' USING ERRCODE = '23514';"
            " END IF;"
            f" IF NEW.body = '{BREAKING_BODY}' THEN RAISE EXCEPTION 'unexpected failure'; END IF;"
            " RETURN NEW; END $$;"
            " CREATE TRIGGER batch_rules BEFORE INSERT ON memories_memory"
            " FOR EACH ROW EXECUTE FUNCTION pg_temp.batch_rules();"
        )


def batch(client, items):
    return client.post("/api/v1/memories/batch", {"items": items}, format="json")


def fact(place, body, **extra):
    return {"body": body, "place": place, "subject_type": "workspace", **extra}


def inserts(queries, table: str) -> int:
    return sum(query["sql"].startswith(f'INSERT INTO "{table}"') for query in queries.captured_queries)


def test_the_rows_kept_their_keys_and_receipts_are_inserted_a_statement_each(agent_api, general, caplog):
    items = [fact(general, f"Fact {n}", idempotency_key=f"one-insert-{n}") for n in range(30)]
    items.insert(7, fact(general, ""))  # refused in Python: the rest still go in the one insert
    with caplog.at_level(logging.WARNING), CaptureQueriesContext(connection) as queries:
        data = batch(agent_api, items).json()
    assert (data["created"], data["refused"]) == (30, 1)
    assert [inserts(queries, table) for table in ("memories_memory", "memories_idempotencykey")] == [1, 1]
    assert inserts(queries, "memories_memoryaudit") == 1
    assert Memory.objects.count() == MemoryAudit.objects.count() == IdempotencyKey.objects.count() == 30
    assert FALLBACK not in caplog.text  # the positive control is the next test


def test_the_database_refusing_one_row_keeps_the_others_and_names_the_rule(agent_api, general, database_rules, caplog):
    items = [fact(general, "Kept first"), fact(general, REFUSED_BODY), fact(general, "Kept too", idempotency_key="k")]
    with caplog.at_level(logging.WARNING, logger="memories.api.batch"):
        data = batch(agent_api, items).json()
    assert [item["status"] for item in data["items"]] == ["created", "refused", "created"]
    error = data["items"][1]["error"]
    assert error["error"] == "invalid" and error["fields"] == {
        "memories_test_only_rule": ["memories_test_only_rule: this body is refused"]
    }
    assert FALLBACK in caplog.text  # the fallback says it happened
    assert sorted(Memory.objects.values_list("body", flat=True)) == ["Kept first", "Kept too"]
    assert MemoryAudit.objects.count() == 2
    assert IdempotencyKey.objects.get().memory_id == Memory.objects.get(body="Kept too").pk
    # The key written on the fallback path answers a retry as a duplicate, as on the one-insert path.
    again = batch(agent_api, [items[2]]).json()["items"][0]
    assert (again["status"], again["memory"]["id"]) == ("duplicate", data["items"][2]["memory"]["id"])


@pytest.mark.parametrize("refused_first", [False, True], ids=["in-one-insert", "item-by-item"])
def test_an_unexpected_error_mid_batch_writes_nothing(agent_api, general, database_rules, refused_first):
    agent_api.raise_request_exception = False
    items = [fact(general, "Written before", idempotency_key="before"), fact(general, "Also before")]
    if refused_first:  # the fallback writes these two in savepoints, then meets the failure
        items.insert(1, fact(general, REFUSED_BODY))
    items += [fact(general, BREAKING_BODY), fact(general, "Never reached", idempotency_key="after")]
    assert batch(agent_api, items).status_code == 500
    assert (Memory.objects.count(), MemoryAudit.objects.count(), IdempotencyKey.objects.count()) == (0, 0, 0)
    # Positive control: without the failing item the same batch writes.
    assert batch(agent_api, [item for item in items if item["body"] != BREAKING_BODY]).status_code == 200
    assert Memory.objects.count() == 3


def test_a_key_twice_in_one_batch_is_written_once_and_a_changed_request_under_it_is_refused(agent_api, general):
    items = [
        fact(general, "Standup at 9", idempotency_key="twice"),
        fact(general, "Standup at 9", idempotency_key="twice"),
    ]
    items.append(fact(general, "Standup at 10", idempotency_key="twice"))
    data = batch(agent_api, items).json()
    assert [item["status"] for item in data["items"]] == ["created", "duplicate", "refused"]
    assert data["items"][0]["memory"]["id"] == data["items"][1]["memory"]["id"]
    assert data["items"][2]["error"]["error"] == "conflict" and "Idempotency-Key" in data["items"][2]["error"]["fields"]
    assert Memory.objects.count() == IdempotencyKey.objects.count() == 1


@pytest.mark.parametrize("path", ["one insert", "item by item"])
def test_a_user_fact_gets_its_key_through_the_api_and_the_batch(member_api, dm_with_mona, database_rules, path):
    lone = member_api.post("/api/v1/memories", {"body": "My timezone is CET", "place": dm_with_mona}, format="json")
    assert lone.status_code == 201
    assert Learning.objects.get(memory_id=lone.json()["id"]).key == "my:timezone"
    items = [{"body": "I prefer tea", "place": dm_with_mona}, {"body": "Likes long walks", "place": dm_with_mona}]
    if path == "item by item":
        items.append({"body": REFUSED_BODY, "place": dm_with_mona})
    data = batch(member_api, items).json()
    tea, walks = (item["memory"]["id"] for item in data["items"][:2])
    assert Learning.objects.get(memory_id=tea).key == "prefers:tea"
    assert not Learning.objects.filter(memory_id=walks).exists()  # no known shape, no key


def test_a_batchs_user_facts_get_their_keys_in_one_read_and_one_insert(member_api, dm_with_mona):
    bodies = ["I prefer tea", "My timezone is CET", "I live in Leeds", "I work at Acme"]
    items = [{"body": body, "place": dm_with_mona} for body in bodies]
    with CaptureQueriesContext(connection) as queries:
        assert batch(member_api, items).json()["created"] == 4
    assert inserts(queries, "threads_learning") == 1
    assert sum('FROM "accounts_user"' in query["sql"] for query in queries.captured_queries) <= 2
    assert Learning.objects.filter(memory__body__in=bodies).count() == 4  # the positive control: all keyed
