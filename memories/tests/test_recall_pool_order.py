"""Issue 15, round six: the contextual statement numbers its pool (candidates and neighbours) in the order its
grouping gives them, and ranking sums in that order whatever order the rows arrive in (a float sum's last
digit depends on the order of its terms), so a plan that returns them otherwise ranks them the same, to the
last digit; the BM25 statistics and the neighbour links ride once, on the pool's first fact; and a candidate
the vector list found takes its similarity from the distance that list computed, the others' computed again,
both exactly the comparison of the fact's vector with the question's."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.services import organisation_create
from memories.models import Author, Bucket, Memory, SourceKind
from memories.recall import contextual, ranking
from memories.recall.query import run_plan
from memories.scopes import Place
from memories.tests.api.helpers import stub_vector
from memories.tests.recall_plans import contextual_plan
from tenancy.context import tenant_activate
from tenancy.sql import APP_ROLE

PLACE = Place("c1", "public", ())
QUESTION = "when is the kettle descaled"
WORDS = ("kettle", "descaling", "budget", "parking", "tea")


@pytest.fixture
def tenant(db):
    org = organisation_create(slug="pool-order")
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


@pytest.fixture
def rows(tenant) -> list[dict]:
    """The statement's rows, as `archivist_app` with the tenant set."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=tenant.pk)
        return run_plan(contextual_plan(tenant, place=PLACE, question=QUESTION), cursor)[0]


def test_ranking_is_the_same_whatever_order_the_rows_arrive_in(rows):
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


def test_the_statistics_ride_once_on_the_pools_first_fact(tenant, rows):
    carrying = [row for row in rows if row["bm25"] is not None]
    assert len(rows) > contextual.CANDIDATES and len(carrying) == 1 and carrying[0]["pool_order"] == 1
    found = carrying[0]["bm25"]
    sampled, total, _, frequency, links = json.loads(found) if isinstance(found, str) else found
    here = Memory.objects.filter(organisation=tenant, scope_ref="c1")
    assert sampled == total == here.count() and links  # the place's facts; neighbours linked
    assert frequency["kettl"] == here.filter(body__contains="kettle").count()


@pytest.mark.parametrize("shared_read", [True, False], ids=["one read of the place", "over the table"])
def test_each_similarity_is_exactly_the_comparison_of_the_vectors(tenant, shared_read):
    plan = contextual_plan(tenant, place=PLACE, question=QUESTION, shared_read=shared_read)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=tenant.pk)
        rows = run_plan(plan, cursor)[0]
        cursor.execute(
            "SELECT id::text, 1 - (embedding <=> %s::halfvec) FROM memories_memory WHERE id::text = ANY(%s)",
            [plan.params["qvec"], [row["id"] for row in rows]],
        )
        compared = dict(cursor.fetchall())
    assert {row["id"]: row["similarity"] for row in rows} == compared
    # Both ways are taken: candidates of the vector list, and facts it did not offer (neighbours, words only).
    assert {row["semantic_rank"] is None for row in rows} == {True, False}
