"""Issue 15, round five: a tenant with an HNSW index gets a partial GIN index on `search_vector` beside it, built,
looked after and dropped by the same sweep; `memories_word_list` still returns only the tenant of the
transaction's rows; a word index that cannot be built is logged and leaves the tenant's HNSW index in use."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.services import organisation_create
from memories.models import Memory, TenantVectorIndex
from memories.recall import candidates
from memories.recall.candidates import RecallRequest
from memories.recall.hnsw import (
    index_name_for,
    vector_index_drop,
    vector_index_maintain,
    word_index_build,
    word_index_name_for,
)
from memories.scopes import Place
from memories.tests.turn_api.helpers import stub_vector
from memories.tests.turn_api.test_vector_index import seed
from tenancy.context import tenant_activate
from tenancy.sql import APP_ROLE

THRESHOLD = 55
PLACE = Place("c1", "public", ())


def index_definition(name: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        row = cursor.fetchone()
    return row[0] if row else None


@pytest.fixture
def tenants(transactional_db):
    """Two tenants above the threshold (CREATE INDEX CONCURRENTLY needs committed rows, outside a transaction)."""
    rng = np.random.default_rng(5)
    centroids = rng.standard_normal((5, 384))
    first, second = organisation_create(slug="words-first"), organisation_create(slug="words-second")
    for org in (first, second):
        seed(org, THRESHOLD + 5, rng=rng, centroids=centroids)  # workspace rows, "fact 0" … "fact 59"
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")
    yield first, second, vector_index_maintain(threshold=THRESHOLD)
    for org in (first, second):
        vector_index_drop(organisation_id=org.pk)


def word_list(org, tenant_id) -> list[str]:
    """`memories_word_list` for "fact" (every row), as `archivist_app` with `tenant_id` set: the bodies it gives."""
    request = RecallRequest(
        organisation_id=org.pk,
        place=PLACE,
        limit=100,
        pool=100,
        lists=("lexical",),
        question="fact",
        query_vector=stub_vector("fact"),
        now=timezone.now(),
        shared_read=False,
    )
    found = candidates.candidate_ctes(request)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=tenant_id)
        cursor.execute(
            f"WITH {candidates.TSQUERY} {candidates._WORD_LIST}", {**found.params, "question": request.question}
        )
        ids = [row[0] for row in cursor.fetchall()]
    return sorted(set(Memory.objects.filter(pk__in=ids).values_list("organisation__slug", flat=True)))


def test_each_indexed_tenant_gets_its_own_word_index_beside_its_hnsw_index(tenants):
    first, second, sweep = tenants
    assert sorted(sweep["built"]) == sorted([str(first.pk), str(second.pk)])
    for org in (first, second):
        assert TenantVectorIndex.objects.get(organisation=org).state == "ready"
        definition = index_definition(word_index_name_for(org.pk))
        assert definition is not None and "USING gin (search_vector)" in definition
        assert f"organisation_id = '{org.pk}'::uuid" in definition and "redacted_at IS NULL" in definition
    assert vector_index_maintain(threshold=THRESHOLD)["word_indexes"] == []  # nothing to do twice


def test_the_planner_uses_the_tenants_word_index_for_the_functions_statement(tenants):
    first, second, _ = tenants
    # The statement `memories_word_list` runs, with the tenant as the literal it writes (as the owner, as the
    # definer function runs it). Plain scans off: at this size reading all of the tenant's rows costs nothing,
    # so only bitmap scans are left, of the shared GIN index, the tenant's rows, or the tenant's word index.
    for org, other in ((first, second), (second, first)):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off")
            cursor.execute(
                "EXPLAIN SELECT m.id FROM memories_memory m WHERE m.organisation_id = %s::uuid"
                " AND m.search_vector @@ to_tsquery('simple', '7') AND m.redacted_at IS NULL"
                " AND m.superseded_by_id IS NULL AND m.bucket <> 'system' AND m.stance IS NULL",
                [str(org.pk)],
            )
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert word_index_name_for(org.pk) in plan
        assert word_index_name_for(other.pk) not in plan


def test_the_word_list_keeps_to_the_tenant_of_the_transaction_with_word_indexes(tenants):
    first, second, _ = tenants
    assert word_list(first, first.pk) == ["words-first"]
    assert word_list(second, second.pk) == ["words-second"]
    # The tenant comes from the transaction's setting, never from the statement; none set, nothing.
    assert word_list(first, second.pk) == ["words-second"]
    assert word_list(first, None) == []


def test_a_ready_tenants_missing_word_index_is_built_at_the_next_sweep(tenants):
    first, second, _ = tenants
    with connection.cursor() as cursor:
        cursor.execute(f'DROP INDEX "{word_index_name_for(first.pk)}"')
    assert vector_index_maintain(threshold=THRESHOLD)["word_indexes"] == [str(first.pk)]
    assert index_definition(word_index_name_for(first.pk)) is not None


def test_a_word_index_that_cannot_be_built_is_logged_and_the_hnsw_index_stays_in_use(tenants, caplog):
    first, _, _ = tenants
    name = word_index_name_for(first.pk)
    with connection.cursor() as cursor:
        cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute(f'CREATE TABLE "{name}" (id int)')  # the name taken: the build cannot make the index
    try:
        with caplog.at_level(logging.ERROR, logger="memories.recall.hnsw"):
            assert word_index_build(organisation_id=first.pk) is False
        assert any(name in record.getMessage() for record in caplog.records)
        assert TenantVectorIndex.objects.get(organisation=first).state == "ready"
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP TABLE "{name}"')


def test_a_tenant_that_shrinks_loses_its_word_index_with_its_hnsw_index(tenants):
    first, second, _ = tenants
    Memory.objects.filter(organisation=first).update(embedding=None, embedding_model="")
    assert vector_index_maintain(threshold=THRESHOLD)["dropped"] == [str(first.pk)]
    assert index_definition(index_name_for(first.pk)) is None
    assert index_definition(word_index_name_for(first.pk)) is None
    assert index_definition(word_index_name_for(second.pk)) is not None  # the control: the other keeps its own
