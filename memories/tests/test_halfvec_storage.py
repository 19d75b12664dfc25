"""Embeddings are stored as halfvec(384): migration 0015 converts existing rows and rebuilds each organisation's
partial HNSW index with the halfvec operator class; on a pgvector without halfvec it refuses before changing
anything, saying what to do."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.services import organisation_create
from memories.models import Memory
from memories.recall.hnsw import index_name_for, index_predicate
from memories.tests.api.helpers import learned_facts, stub_vector

MIGRATION = importlib.import_module("memories.migrations.0015_halfvec_embeddings")
BEFORE, AFTER = "0014_quarantine_rebound_dms", "0015_halfvec_embeddings"
QUESTION = "[" + ",".join(f"{value:.7g}" for value in stub_vector("the question")) + "]"


def migrate_memories_to(name: str) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([("memories", name)])


def migrate_everything_to_latest() -> None:
    # Going back before 0015 also unapplied the migrations that depend on it in other apps.
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def column_type() -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'memories_memory'::regclass AND attname = 'embedding'"
        )
        return cursor.fetchone()[0]


def nearest(org, cast: str) -> list[tuple[str, float]]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id::text, embedding <=> %s::{cast} AS d FROM memories_memory"
            " WHERE organisation_id = %s ORDER BY d LIMIT 10",
            [QUESTION, org.pk],
        )
        return cursor.fetchall()


@pytest.mark.django_db(transaction=True)
def test_0015_converts_existing_vectors_and_rebuilds_the_tenant_indexes():
    org = organisation_create(slug="halfvec-migration")
    learned_facts(org, [f"fact {index}" for index in range(300)])
    name = index_name_for(org.pk)
    migrate_memories_to(BEFORE)
    try:
        assert column_type() == "vector(384)"  # the reverse migration brought the old type back
        with connection.cursor() as cursor:
            # The index as it was built before halfvec, on the old operator class.
            cursor.execute(
                f'CREATE INDEX "{name}" ON memories_memory USING hnsw (embedding vector_cosine_ops)'
                f" WITH (m = 16, ef_construction = 64) WHERE {index_predicate(org.pk)}"
            )
        before = nearest(org, "vector")
    finally:
        migrate_memories_to(AFTER)
        migrate_everything_to_latest()
    assert column_type() == "halfvec(384)"
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        (definition,) = cursor.fetchone()
    assert "USING hnsw (embedding halfvec_cosine_ops)" in definition
    assert str(org.pk) in definition and "m='16'" in definition  # same predicate and parameters
    after = nearest(org, "halfvec")
    assert [row[0] for row in after] == [row[0] for row in before]
    assert np.allclose([row[1] for row in after], [row[1] for row in before], atol=1e-3)
    stored = Memory.objects.filter(organisation=org, body="fact 7").values_list("embedding", flat=True).get()
    assert np.allclose(stored, stub_vector("fact 7"), atol=1e-3)  # half precision of the same vector
    with connection.cursor() as cursor:
        # 300 rows: with sorting priced out, the plan takes the tenant's index wherever it can.
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_sort = off")
        cursor.execute(
            f"EXPLAIN SELECT id FROM memories_memory WHERE {index_predicate(org.pk)}"
            " ORDER BY embedding <=> %s::halfvec LIMIT 10",
            [QUESTION],
        )
        plan = " ".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
        cursor.execute("RESET enable_sort")
        cursor.execute(f'DROP INDEX "{name}"')
    assert f"Index Scan using {name}" in plan


@pytest.mark.parametrize("version", ["0.6.2", "0.5.1", None])
def test_0015_refuses_a_pgvector_without_halfvec_and_says_what_to_do(version):
    message = MIGRATION.halfvec_refusal(version)
    assert message is not None
    assert f"pgvector {version or '(none)'}" in message and "ALTER EXTENSION vector UPDATE" in message


@pytest.mark.parametrize("version", ["0.7.0", "0.8.6", "0.10.0"])
def test_0015_accepts_pgvector_0_7_and_newer(version):
    assert MIGRATION.halfvec_refusal(version) is None  # the control: a version with halfvec goes ahead
