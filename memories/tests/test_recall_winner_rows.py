"""Issue 15: contextual recall reads its winners' columns in its one statement (no second read), and each
recall row holds exactly what a read of the table gives: the same values of the same types, times in
Django's time zone, unknown times as None."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.services import organisation_create
from memories.models import Author, Bucket, Memory, SourceKind
from memories.recall import contextual, query
from memories.recall.candidates import RESULT_COLUMNS
from memories.scopes import Place
from memories.tests.api.helpers import stub_vector
from memories.tests.recall_plans import contextual_plan
from tenancy.context import tenant_activate
from tenancy.sql import APP_ROLE

PLACE = Place("c1", "public", ())
QUESTION = "when is the kettle descaled"


@pytest.fixture
def facts(db):
    org = organisation_create(slug="winner-rows")
    written = (timezone.now() - timedelta(days=2)).replace(microsecond=0)
    rows = [
        Memory(
            organisation=org,
            body=f"kettle note {i}: descaled on day {i}",
            scope="channel",
            scope_ref="c1",
            bucket=Bucket.LEARNED,
            author=Author.MODEL,
            source_kind=SourceKind.MESSAGE,
            source_ref=f"D1:{i}",
            occurred_at=datetime(2023, 5, 8, 13, 56, 1, 123456, tzinfo=UTC) if i % 2 else None,
            expires_at=timezone.now() + timedelta(days=30, microseconds=i),
            pinned=i == 3,
            embedding=stub_vector(f"kettle note {i}"),
            embedding_model="stand-in",
        )
        for i in range(12)
    ]
    Memory.objects.bulk_create(rows)
    for i, row in enumerate(rows):
        Memory.objects.filter(pk=row.pk).update(created_at=written + timedelta(seconds=i, microseconds=7))
    return org


def recalled(org, settings) -> tuple[list[dict], list[str]]:
    """A contextual recall as a request runs it (archivist_app, the tenant set), and the SQL it sent."""
    settings.EMBEDDER = "none"  # the vector is handed in below; no model is loaded
    with transaction.atomic(), CaptureQueriesContext(connection) as sent:
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=org.pk)
        plan = contextual_plan(org, place=PLACE, question=QUESTION)
        rows, _, _ = query._execute(plan)
        ranked = contextual.rank_rows(rows, question=QUESTION, limit=10)
    return ranked, [entry["sql"] for entry in sent.captured_queries]


def test_each_recall_row_holds_what_the_table_holds(facts, settings):
    ranked, _ = recalled(facts, settings)
    assert len(ranked) == 10
    table = {row["id"]: row for row in Memory.objects.filter(organisation=facts).values(*RESULT_COLUMNS)}
    for row in ranked:
        shown = {name: row[name] for name in RESULT_COLUMNS}
        assert shown == table[row["id"]]
        assert {name: type(value) for name, value in shown.items()} == {
            name: type(value) for name, value in table[row["id"]].items()
        }
        assert row["created_at"].tzinfo is not None and row["created_at"].utcoffset() == timedelta(0)
    assert {row["occurred_at"] is None for row in ranked} == {True, False}  # both kinds of time were checked
    assert ranked[0]["pinned"] and ranked[0]["pin_rank"] == 1  # pinned first, its columns read the same way


def test_the_winners_need_no_second_read(facts, settings):
    ranked, sent = recalled(facts, settings)
    reads = [sql for sql in sent if "memories_memory" in sql]
    assert ranked and len(reads) == 1, reads  # the statement itself; positive control: it is captured


def test_every_candidate_keeps_the_exact_time_it_happened(facts, settings):
    """The date cue reads when each fact happened (or was written, if that is unknown) to the microsecond."""
    settings.EMBEDDER = "none"
    plan = contextual_plan(facts, place=PLACE, question=QUESTION)
    rows, _, _ = query._execute(plan)
    table = {
        str(memory.pk): memory.occurred_at or memory.created_at for memory in Memory.objects.filter(organisation=facts)
    }
    whens = {row["id"]: contextual._candidate(row["id"], row).when for row in rows}
    assert len(whens) == 12 and whens == table
    assert {when.microsecond for when in whens.values()} >= {7, 123456}  # both sources, to the microsecond
