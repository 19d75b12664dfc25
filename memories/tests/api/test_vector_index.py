"""Large tenants get a partial HNSW index built in the background; recall uses it only for them, keeps the
tenant a literal so the planner can, and falls back to an exact scan when the filters leave too few rows."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.services import agent_create, organisation_create
from memories.models import Author, Bucket, Memory, SourceKind, TenantVectorIndex
from memories.recall.candidates import RecallRequest, candidates_plan
from memories.recall.hnsw import forget_hnsw_cache, index_name_for, vector_index_drop, vector_index_maintain
from memories.recall.query import recall, run_plan
from memories.scopes import Place
from memories.tests.api.helpers import stub_vector
from memories.tests.recall_plans import generic_plans_run, since

# One worker runs this module, so the tenants its module fixture seeds and indexes are built once.
pytestmark = pytest.mark.xdist_group("vector_index")

PLACE = Place("c1", "public", ())
THRESHOLD = 2000


def seed(org, count, *, agent=None, model="stand-in", rng=None, centroids=None):
    rng = rng or np.random.default_rng(7)
    now = timezone.now()
    rows = []
    for index in range(count):
        vector = centroids[index % len(centroids)] + 0.35 * rng.standard_normal(384)
        rows.append(
            Memory(
                organisation=org,
                agent=agent,
                bucket=Bucket.LEARNED,
                author=Author.MODEL,
                source_kind=SourceKind.MESSAGE,
                body=f"fact {index}",
                expires_at=now + timedelta(days=30),
                embedding=(vector / np.linalg.norm(vector)).tolist(),
                embedding_model=model,
            )
        )
    Memory.objects.bulk_create(rows, batch_size=500)


@pytest.fixture(scope="module")
def tenants(django_db_setup, django_db_blocker):
    """Built once for the module and committed: CREATE INDEX CONCURRENTLY cannot run inside a test's transaction."""
    with django_db_blocker.unblock():
        rng = np.random.default_rng(11)
        centroids = rng.standard_normal((20, 384))
        large = organisation_create(slug="vector-large")
        small = organisation_create(slug="vector-small")
        crowded = organisation_create(slug="vector-crowded")
        other_agent, _ = agent_create(organisation=crowded, name="other")
        mine, _ = agent_create(organisation=crowded, name="mine")
        seed(large, THRESHOLD + 500, rng=rng, centroids=centroids)
        seed(small, 50, rng=rng, centroids=centroids)
        # Nearly all of this tenant's vectors are another agent's: the index's candidates are mostly filtered out.
        seed(crowded, THRESHOLD + 100, agent=other_agent, rng=rng, centroids=centroids)
        seed(crowded, 15, agent=mine, rng=rng, centroids=centroids)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memories_memory")
        built = vector_index_maintain(threshold=THRESHOLD)
        again = vector_index_maintain(threshold=THRESHOLD)
        forget_hnsw_cache()
    yield {
        "large": large,
        "small": small,
        "crowded": crowded,
        "mine": mine,
        "rng": rng,
        "centroids": centroids,
        "built": built,
        "again": again,
    }
    with django_db_blocker.unblock():
        for organisation in (large, small, crowded):
            vector_index_drop(organisation_id=organisation.pk)
            Memory.objects.filter(organisation=organisation).delete()
            organisation.agents.all().delete()
            organisation.delete()


# This file's large tenant has 2,500 rows, where PostgreSQL 18 costs the exact scan below the index walk and
# plans it: with sorting priced out, the plan takes the tenant's index wherever the statement can use it.
INDEX_PREFERRED = "SET LOCAL enable_sort = off"


def ids(plan, *, index_preferred: bool = False) -> list:
    with transaction.atomic(), connection.cursor() as cursor:
        if index_preferred:
            cursor.execute(INDEX_PREFERRED)
        rows, _, _ = run_plan(plan, cursor)
    return [row["id"] for row in rows]


def plan_for(org, vector, *, hnsw, agent_id=None):
    return candidates_plan(
        RecallRequest(
            organisation_id=org.pk,
            place=PLACE,
            agent_id=agent_id,
            limit=10,
            lists=("semantic",),
            query_vector=vector,
            model="stand-in",
            now=timezone.now(),
            hnsw_index=index_name_for(org.pk) if hnsw else None,
        )
    )


def test_the_maintenance_task_indexes_only_tenants_above_the_threshold(tenants, db):
    large, small, crowded = tenants["large"], tenants["small"], tenants["crowded"]
    assert sorted(tenants["built"]["built"]) == sorted([str(large.pk), str(crowded.pk)])
    record = TenantVectorIndex.objects.get(organisation=large)
    assert record.state == "ready" and record.rows_at_build == THRESHOLD + 500
    assert not TenantVectorIndex.objects.filter(organisation=small).exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [record.index_name])
        (definition,) = cursor.fetchone()
    assert "hnsw" in definition and "halfvec_cosine_ops" in definition and str(large.pk) in definition
    assert tenants["again"]["built"] == []  # nothing to do twice


def test_the_planner_uses_the_tenants_index_because_the_tenant_is_a_literal(tenants, db):
    large = tenants["large"]
    plan = plan_for(large, stub_vector("q"), hnsw=True)
    assert f"organisation_id = '{large.pk}'::uuid" in plan.sql
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.ef_search = 200")
        cursor.execute(INDEX_PREFERRED)
        cursor.execute("EXPLAIN " + plan.sql, plan.params)
        explain = "\n".join(row[0] for row in cursor.fetchall())
        # The control: the same statement for another tenant never names the large tenant's index.
        other = plan_for(tenants["crowded"], stub_vector("q"), hnsw=True)
        cursor.execute("EXPLAIN " + other.sql, other.params)
        other_explain = "\n".join(row[0] for row in cursor.fetchall())
    assert index_name_for(large.pk) in explain
    assert index_name_for(large.pk) not in other_explain


def test_approximate_top_10_matches_exact_top_10(tenants, db):
    large, rng, centroids = tenants["large"], tenants["rng"], tenants["centroids"]
    overlaps = []
    for index in range(10):
        query = centroids[index] + 0.35 * rng.standard_normal(384)
        query = (query / np.linalg.norm(query)).tolist()
        approx = ids(plan_for(large, query, hnsw=True), index_preferred=True)
        exact = ids(plan_for(large, query, hnsw=False))
        assert len(approx) == len(exact) == 10
        overlaps.append(len(set(approx) & set(exact)) / 10)
    assert sum(overlaps) / len(overlaps) >= 0.95


def test_recall_uses_the_index_for_the_large_tenant_and_exact_search_for_the_small(tenants, db, stub_embedder):
    large, small = tenants["large"], tenants["small"]
    assert recall(organisation=large, place=PLACE, question="q", mode="semantic").ranking["vector_search"] == "hnsw"
    assert recall(organisation=small, place=PLACE, question="q", mode="semantic").ranking["vector_search"] == "exact"


def test_when_filters_leave_too_few_candidates_recall_searches_exactly(tenants, db, stub_embedder):
    crowded, mine = tenants["crowded"], tenants["mine"]
    result = recall(organisation=crowded, place=PLACE, question="q", mode="semantic", limit=10, agent=mine)
    assert result.ranking["vector_search"] == "exact (hnsw fallback)"
    assert len(result.rows) == 10
    assert all(row["agent_id"] == mine.pk for row in result.rows)


def test_a_tenant_with_an_index_is_recalled_by_its_literal_never_prepared(tenants, db, stub_embedder):
    """The partial index is proven from the tenant's literal, so a contextual recall of a tenant with one is never
    the prepared, generic statement, nor is its exact fallback; a tenant without one is (the positive control)."""
    large, small, crowded, mine = tenants["large"], tenants["small"], tenants["crowded"], tenants["mine"]

    def searched(org, **agent) -> str:
        return recall(organisation=org, place=PLACE, question="q", mode="contextual", **agent).ranking["vector_search"]

    before = generic_plans_run()
    assert searched(large) == "hnsw"
    assert searched(crowded, agent=mine) == "exact (hnsw fallback)"
    assert since(before) == {}
    assert searched(small) == "exact"
    assert list(since(before).values()) == [(1, 0)]
