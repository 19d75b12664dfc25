"""Recall's two lists of a large organisation read its own index entries, never a heap page per row: the words
of a question are looked up with the tenant in the full-text index's condition, and an exact scan of a channel's
vectors is answered by the covering index alone."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.services import organisation_create
from memories.recall.candidates import RecallRequest, candidates_plan
from memories.recall.hnsw import index_name_for
from memories.scopes import Place
from memories.tests.api.helpers import learned_facts, stub_vector
from tenancy.sql import APP_ROLE, TENANT_SETTING

PLACE = Place("c1", "public", ())
# Only index scans stay open (an index-only scan needs `enable_indexscan` too), so a plan says which index
# can answer the query, and whether alone.
INDEXES_ONLY = "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off"


def seed(org, count: int, scope: str, scope_ref: str = "") -> None:
    """`count` embedded facts in one scope, each its own vector."""
    learned_facts(org, [f"{scope} fact {index} about tea" for index in range(count)], scope=scope, scope_ref=scope_ref)


def explain_as_tenant(org, sql: str, params, settings: str = "", *, only_index: str | None = None) -> str:
    """The plan as a request sees it: the web role, under row-level security, in the organisation. With
    `only_index`, the table's other indexes are dropped for the plan (and restored: the transaction rolls back)."""
    with transaction.atomic(), connection.cursor() as cursor:
        if only_index:
            cursor.execute(
                "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
                " WHERE x.indrelid = 'memories_memory'::regclass AND i.relname <> %s"
                " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)",
                [only_index],
            )
            for (name,) in cursor.fetchall():
                cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        cursor.execute("SELECT set_config(%s, %s, true)", [TENANT_SETTING, str(org.pk)])
        if settings:
            cursor.execute(settings)
        cursor.execute("EXPLAIN " + sql, params)
        explained = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    return explained


@pytest.mark.django_db(transaction=True)  # VACUUM, which sets the visibility map, cannot run in a transaction
def test_a_channels_exact_vector_scan_is_answered_by_the_covering_index_alone():
    org = organisation_create(slug="cover-only")
    seed(org, 40, "channel", "c1")
    seed(org, 300, "channel", "c2")
    seed(org, 10, "workspace")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories_memory")
    plan = candidates_plan(
        RecallRequest(
            organisation_id=org.pk,
            place=PLACE,
            limit=10,
            lists=("semantic",),
            query_vector=stub_vector("tea"),
            model="stand-in",
            now=timezone.now(),
            hnsw_index=index_name_for(org.pk),  # the large-tenant statement: channel rows scanned exactly
        )
    )
    # Whether it can, not whether this small table's planner would: the other indexes are out of its way.
    explained = explain_as_tenant(org, plan.sql, plan.params, INDEXES_ONLY, only_index="memories_recall_cover_idx")
    assert "Index Only Scan using memories_recall_cover_idx" in explained
    # Positive control: the same scan asking for a column the index does not hold reads the heap.
    body = explain_as_tenant(
        org,
        "SELECT m.body FROM memories_memory m WHERE m.organisation_id = %s AND m.scope = 'channel'"
        " AND m.scope_ref = 'c1' AND m.embedding IS NOT NULL AND m.redacted_at IS NULL"
        " AND m.superseded_by_id IS NULL AND m.bucket <> 'system' ORDER BY m.embedding <=> %s::halfvec LIMIT 10",
        [org.pk, "[" + ",".join(f"{v:.7g}" for v in stub_vector("tea")) + "]"],
        INDEXES_ONLY,
        only_index="memories_recall_cover_idx",
    )
    assert "Index Scan using memories_recall_cover_idx" in body
    assert "Index Only Scan using memories_recall_cover_idx" not in body


@pytest.mark.django_db
def test_a_questions_words_are_looked_up_with_the_tenant_in_the_full_text_index():
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories_memory'")
        definitions = dict(cursor.fetchall())
    assert "USING gin (organisation_id, search_vector)" in definitions["memories_search_tenant_gin"]
    # No index of the words alone is left for the planner to intersect with a bitmap of the tenant's rows.
    assert [name for name, sql in definitions.items() if "USING gin" in sql] == ["memories_search_tenant_gin"]
