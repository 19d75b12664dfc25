"""Issue 15, round five: where the contextual statement reads the table (a tenant with an HNSW index), BM25's
sample is the place's newest facts and the count walks newest first, so both walk `memories_recall_recent_idx`
and stop at their LIMIT; they keep every rule of the candidates (tenant, place, liveness, expiry); a tenant
under the sample's size gets the same statistics as over the shared read of the place."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.services import organisation_create
from memories.models import Author, Bucket, Memory, SourceKind
from memories.recall import contextual
from memories.recall.candidates import RecallPlan, RecallRequest
from memories.recall.query import run_plan
from memories.scopes import Place
from memories.tests.api.helpers import stub_vector
from memories.tests.recall_plans import contextual_plan
from tenancy.context import tenant_activate
from tenancy.sql import APP_ROLE

PLACE = Place("c1", "public", ())
QUESTION = "lamp desk"
FACTS = 10
LEARNED = {"bucket": Bucket.LEARNED, "author": Author.MODEL, "source_kind": SourceKind.MESSAGE}


def fact(org, body, *, minutes_ago, scope_ref="c1", expires_in=30):
    return Memory(
        organisation=org,
        body=body,
        scope="channel",
        scope_ref=scope_ref,
        expires_at=timezone.now() + timedelta(days=expires_in),
        embedding=stub_vector(body),
        embedding_model="stand-in",
        # Kept in `source_ref` until the rows are in: `created_at` is written on insert.
        source_ref=str(minutes_ago),
        **LEARNED,
    )


@pytest.fixture
def tenants(db):
    """Ten facts of the place, a minute apart, `lamp` in the newest two and `desk` in the oldest three; newer
    than all of them, rows the rules exclude, each holding both words."""
    org = organisation_create(slug="bm25-statistics")
    other = organisation_create(slug="bm25-statistics-other")
    rows = []
    for index in reversed(range(FACTS)):  # oldest first on disk: an unordered read would give the oldest
        word = " lamp" if index < 2 else " desk" if index >= FACTS - 3 else ""
        rows.append(fact(org, f"note number {index}{word}" + " filler" * index, minutes_ago=10 + index))
    rows += [
        fact(org, "lamp desk in another channel", minutes_ago=1, scope_ref="c2"),
        fact(org, "the expired lamp desk", minutes_ago=1, expires_in=-1),
        fact(org, "the erased lamp desk", minutes_ago=1),
        fact(other, "the other tenant's lamp desk", minutes_ago=1),
    ]
    Memory.objects.bulk_create(rows)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory SET created_at = now() - source_ref::int * interval '1 minute'"
            " WHERE organisation_id IN (%s, %s)",
            [org.pk, other.pk],
        )
    Memory.objects.filter(body="the erased lamp desk").update(redacted_at=timezone.now(), body="", embedding=None)
    return org, other


def plan(org, *, shared_read: bool, **params) -> RecallPlan:
    built = contextual_plan(org, place=PLACE, question=QUESTION, shared_read=shared_read)
    return replace(built, params={**built.params, **params})


def statistics(org, statement: RecallPlan) -> tuple[int, int, float, dict]:
    """(sampled, total, average length, document frequency) as the statement gives them, as `archivist_app`."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=org.pk)
        rows, _, _ = run_plan(statement, cursor)
    found = next(row["bm25"] for row in rows if row["bm25"] is not None)
    sampled, total, average_length, frequency, _ = json.loads(found) if isinstance(found, str) else found
    return sampled, total, float(average_length), frequency


def average_length(bodies: list[str]) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT avg(length(search_vector)) FROM memories_memory WHERE body = ANY(%s)", [bodies])
        return float(cursor.fetchone()[0])


def test_over_the_table_the_sample_is_the_places_newest_facts(tenants):
    org, _ = tenants
    sampled, total, length, frequency = statistics(org, plan(org, shared_read=False, sample=5, total_cap=100))
    newest = [f"note number {index}" + (" lamp" if index < 2 else "") + " filler" * index for index in range(5)]
    assert (sampled, total) == (5, FACTS)  # the place's ten, none of the excluded rows
    assert length == pytest.approx(average_length(newest))
    # The newest five hold `lamp` twice and `desk` never: the older facts and the excluded rows are not read.
    assert frequency == {"lamp": 2}
    # Positive control: a sample reaching the oldest facts counts `desk` in them, and nothing of the excluded rows.
    _, _, _, everything = statistics(org, plan(org, shared_read=False, sample=FACTS, total_cap=100))
    assert everything == {"lamp": 2, "desk": 3}


def test_the_count_stops_at_its_cap(tenants):
    org, _ = tenants
    sampled, total, _, _ = statistics(org, plan(org, shared_read=False, sample=3, total_cap=7))
    assert (sampled, total) == (3, 7)


def test_a_tenant_under_the_sample_size_gets_the_same_statistics_either_way(tenants):
    org, other = tenants
    over_the_table = statistics(org, plan(org, shared_read=False))
    assert over_the_table == statistics(org, plan(org, shared_read=True))
    assert over_the_table[:2] == (FACTS, FACTS) and over_the_table[3] == {"lamp": 2, "desk": 3}
    assert statistics(other, plan(other, shared_read=False))[3] == {"lamp": 1, "desk": 1}  # its own row only


def cte_plan(explain: list[str], name: str) -> str:
    """The lines of one CTE's plan in an `EXPLAIN` (up to the next CTE or InitPlan at its depth or above)."""
    start = next(index for index, line in enumerate(explain) if line.strip() == f"CTE {name}")
    depth = len(explain[start]) - len(explain[start].lstrip())
    lines = [explain[start]]
    for line in explain[start + 1 :]:
        if len(line) - len(line.lstrip()) <= depth:
            break
        lines.append(line)
    return "\n".join(lines)


def test_the_sample_and_the_count_walk_the_newest_first_index(tenants):
    org, _ = tenants
    statement = plan(org, shared_read=False)
    before, after = statement.planner_settings
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=org.pk)
        cursor.execute(before + "EXPLAIN " + statement.sql + after, statement.params)
        while cursor.description is None and cursor.nextset():
            pass
        explain = [row[0] for row in cursor.fetchall()]
    assert "Index Scan using memories_recall_recent_idx" in cte_plan(explain, "sample")
    count = cte_plan(explain, "bm25").split("InitPlan")[1]  # the first InitPlan of bm25 is the count
    assert "Index Scan using memories_recall_recent_idx" in count
    # Positive control: over the shared read the sample reads the place's materialized rows, not the index.
    shared = plan(org, shared_read=True)
    assert "ORDER BY m.created_at DESC LIMIT %(sample)s" not in shared.sql
    assert "ORDER BY m.created_at DESC LIMIT %(sample)s" in statement.sql


def test_every_contextual_statement_plans_with_sorting_off(tenants):
    # With an HNSW index too: the policies' filters make the planner expect a few hundred of the place's rows,
    # and with sorting allowed it read them all by bitmap and sorted them for the sample and the count.
    org, _ = tenants
    request = RecallRequest(
        organisation_id=org.pk,
        place=PLACE,
        limit=10,
        lists=("semantic", "lexical"),
        question=QUESTION,
        query_vector=stub_vector(QUESTION),
        model="stand-in",
        now=timezone.now(),
    )
    for hnsw_index in (None, "memories_hnsw_x"):
        built = contextual.contextual_plan(replace(request, hnsw_index=hnsw_index))
        assert (
            built.planner_settings
            == contextual.WALK_THE_INDEX
            == ("SET LOCAL enable_sort = off; ", "; SET LOCAL enable_sort TO DEFAULT")
        )
