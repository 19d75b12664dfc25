"""Reads survive a bad row: a row whose time is past the write rules' bound (written around the database's
CHECK, as a restore or an operator in psql could) is skipped and logged by list, get, recall and render,
which answer normally; one test per bounded column, each with a good row beside it as the positive control.

Recall and render load only a row's created_at, occurred_at and expires_at (`TURN_TIMES`), and test only
those on the hot path: a row whose valid_from or valid_until is past the bound is shown there (nothing of it
that a turn loads is unreadable), and skipped by list and get, which load every column."""

from __future__ import annotations

import pytest
from django.db import connection

from memories.db.predicates import TURN_TIMES
from memories.tests.api.helpers import recall, remember, render
from memories.tests.test_memory_rules import raw_insert

pytestmark = pytest.mark.django_db

# Values PostgreSQL stores and Python cannot load (before year 1, after year 9999).
PAST_THE_BOUND = {
    "created_at": "0001-12-31 23:30:00+00 BC",
    "occurred_at": "0001-12-31 23:30:00+00 BC",
    "valid_from": "0001-01-01 00:00:00+00 BC",
    "valid_until": "20000-01-01 00:00:00+00",
    "expires_at": "20000-01-01 00:00:00+00",
}


def plant(org, column: str) -> str:
    """A shared workspace fact with `column` past the bound, written around the CHECK (dropped in this test's
    transaction only, as a database restored from before it would be)."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the good row's deferred checks first: ALTER waits for none
        cursor.execute("ALTER TABLE memories_memory DROP CONSTRAINT memories_times_in_range")
    return raw_insert(
        org,
        bucket="learned",
        author="model",
        source_kind="message",
        body="The bad row says hello",
        **{column: PAST_THE_BOUND[column]},
    )


@pytest.mark.parametrize("column", list(PAST_THE_BOUND))
def test_list_get_recall_and_render_skip_and_log_a_row_past_the_bound(org, agent_api, general, caplog, column):
    good = remember(agent_api, general, "The good row says hello").json()["id"]
    bad = plant(org, column)

    where = {"place": general["channel"]}  # an agent reads in the place it serves
    listed = agent_api.get("/api/v1/memories", where)
    assert listed.status_code == 200
    assert [row["id"] for row in listed.json()["results"]] == [good]
    assert agent_api.get(f"/api/v1/memories/{bad}", where).status_code == 404
    assert agent_api.get(f"/api/v1/memories/{good}", where).status_code == 200

    in_turn = column in TURN_TIMES
    for mode in ("recent", "lexical", "contextual"):
        answer = recall(agent_api, general, "hello", mode=mode)
        assert answer.status_code == 200, (mode, answer.content)
        recalled = {row["id"] for row in answer.json()["results"]}
        assert recalled == ({good} if in_turn else {good, bad}), mode
    rendered = render(agent_api, general, f"turn-{column}")
    assert rendered.status_code == 200
    assert "The good row" in rendered.json()["text"]
    assert ("The bad row" in rendered.json()["text"]) is not in_turn

    logged = [record.getMessage() for record in caplog.records if bad in record.getMessage()]
    for read in ("list", "get", "recall", "render") if in_turn else ("list", "get"):
        assert any(message.startswith(read) for message in logged), (read, logged)
