"""Issue 15, round six: with the one read of the place, the contextual statement reads its pool (candidates and
neighbours) from that read, with the distance it computed, instead of looking each fact up in the table again;
ranking orders the pool as the statement numbered it, whatever order the rows arrive in; `ts_rank` is computed
only when ranking reads it (BM25 off)."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.services import organisation_create
from memories.models import Author, Bucket, Memory, SourceKind
from memories.recall import contextual, ranking
from memories.recall.candidates import RecallPlan
from memories.recall.query import run_plan
from memories.scopes import Place
from memories.tests.recall_plans import contextual_plan
from memories.tests.turn_api.helpers import stub_vector
from tenancy.context import tenant_activate
from tenancy.sql import APP_ROLE

PLACE = Place("c1", "public", ())
QUESTION = "when is the kettle descaled"
WORDS = ("kettle", "descaling", "budget", "parking", "tea")
NO_BM25 = ranking.DEFAULT_CONFIG.without("bm25")


@pytest.fixture
def tenant(db):
    org = organisation_create(slug="pool-from-place")
    rows = [
        Memory(
            organisation=org,
            body=f"{WORDS[i % 5]} note {i} about the kettle" if i % 3 else f"note {i}",
            scope="channel",
            scope_ref="c1" if i % 7 else "c2",
            expires_at=timezone.now() + timedelta(days=30),
            bucket=Bucket.LEARNED,
            author=Author.MODEL,
            source_kind=SourceKind.MESSAGE,
            embedding=stub_vector(f"note {i}"),
            embedding_model="stand-in",
        )
        for i in range(60)
    ]
    Memory.objects.bulk_create(rows)
    return org


def as_app(org, work):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=org.pk)
        return work(cursor)


def statement_rows(org, plan: RecallPlan) -> list[dict]:
    return as_app(org, lambda cursor: run_plan(plan, cursor)[0])


def pool_read(plan: RecallPlan) -> str:
    """The statement's final select: where the pool's rows are read."""
    return plan.sql.split("LEFT JOIN LATERAL", 1)[1]


def test_the_pool_is_read_from_the_place_not_looked_up_in_the_table(tenant):
    shared = contextual_plan(tenant, place=PLACE, question=QUESTION, shared_read=True)
    over_the_table = contextual_plan(tenant, place=PLACE, question=QUESTION, shared_read=False)
    # The question's vector is compared once per row, in the place's read; the pool takes that distance.
    assert "memories_memory" not in pool_read(shared) and "JOIN place m ON m.id = pool.id" in pool_read(shared)
    assert shared.sql.count("<=> %(qvec)s") == 1 and "1 - m.distance" in pool_read(shared)
    # Positive control: over the table the pool's facts are looked up, and their distance computed again.
    assert "JOIN memories_memory m ON m.id = pool.id" in pool_read(over_the_table)
    assert "<=> %(qvec)s" in pool_read(over_the_table)
    # The same facts with the same columns either way (the rows' equality in every column, under the policies
    # and as the owner, is memories/tests/turn_api/test_recall_place_read.py's).
    by_id = [{row["id"]: row for row in statement_rows(tenant, plan)} for plan in (shared, over_the_table)]
    assert len(by_id[0]) > contextual.CANDIDATES and by_id[0] == by_id[1]


def test_ranking_is_the_same_whatever_order_the_rows_arrive_in(tenant):
    rows = statement_rows(tenant, contextual_plan(tenant, place=PLACE, question=QUESTION))
    assert sorted(row["pool_order"] for row in rows) == list(range(1, len(rows) + 1))
    expected = contextual.rank_rows([dict(row) for row in rows], question=QUESTION, limit=10)
    shuffler = random.Random(15)
    for _ in range(5):
        shuffled = [dict(row) for row in rows]
        shuffler.shuffle(shuffled)
        assert contextual.rank_rows(shuffled, question=QUESTION, limit=10) == expected  # scores to the last digit


def test_control_a_float_sum_depends_on_the_order_of_its_terms():
    """Why ranking needs one order: z-scores over the same values in another order differ in the last digit."""
    values = [0.1, 0.2, 0.3]
    forwards, backwards = ranking.zscores(values), ranking.zscores(values[::-1])[::-1]
    assert forwards != backwards and forwards == pytest.approx(backwards)


def test_ts_rank_is_computed_only_when_ranking_reads_it(tenant):
    with_bm25 = statement_rows(tenant, contextual_plan(tenant, place=PLACE, question=QUESTION))
    without = statement_rows(tenant, contextual_plan(tenant, place=PLACE, question=QUESTION, config=NO_BM25))
    assert {row["ts_rank"] for row in with_bm25} == {None}
    assert any(row["ts_rank"] for row in without)  # positive control: BM25 off, the statement gives it
    # BM25 ranks the same without it; ranking by ts_rank needs it: without it every lexical score is 0.
    ranked = [
        [(row["id"], row["score"]) for row in contextual.rank_rows(rows, question=QUESTION, limit=10, config=config)]
        for rows, config in (
            (with_bm25, ranking.DEFAULT_CONFIG),
            (without, ranking.DEFAULT_CONFIG),
            (without, NO_BM25),
            ([{**row, "ts_rank": None} for row in without], NO_BM25),
        )
    ]
    assert ranked[0] == ranked[1]
    assert ranked[2] != ranked[3]
