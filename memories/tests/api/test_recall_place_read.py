"""Issue 15: with an exact vector list, recall reads the place's rows once for every list; the rows it finds,
their ranks, the BM25 statistics and the unembedded count are those of one read per list, under the web
role's row-level security as for the owner."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.services import organisation_create
from memories.models import Author, Bucket, Memory, SourceKind
from memories.recall import contextual
from memories.recall.candidates import RecallRequest, candidates_plan, reads_place_once
from memories.recall.query import run_plan
from memories.scopes import Place
from memories.tests.api.helpers import stub_vector
from tenancy.context import tenant_activate
from tenancy.sql import APP_ROLE

PLACE = Place("c1", "public", ())
QUESTION = "when is the kettle descaled"
WORDS = ("kettle", "descaling", "budget", "parking", "tea")


# What every fact here shares: learned by a model from messages.
LEARNED = {"bucket": Bucket.LEARNED, "author": Author.MODEL, "source_kind": SourceKind.MESSAGE}


def fact(org, body, *, scope="channel", scope_ref="c1", expires_in=30, model="stand-in", embedded=True, **extra):
    vector = {"embedding": stub_vector(body), "embedding_model": model} if embedded else {}
    expires_at = timezone.now() + timedelta(days=expires_in)
    return Memory(
        organisation=org,
        body=body,
        scope=scope,
        scope_ref=scope_ref,
        expires_at=expires_at,
        **LEARNED,
        **vector,
        **extra,
    )


@pytest.fixture
def tenant(db):
    org = organisation_create(slug="place-read")
    other = organisation_create(slug="place-read-other")
    rows = [fact(org, f"{WORDS[i % 5]} note {i} about the kettle" if i % 3 else f"note {i}") for i in range(40)]
    rows += [fact(org, f"workspace {WORDS[i % 5]} {i}", scope="workspace", scope_ref="") for i in range(12)]
    rows += [
        fact(org, "kettle in another channel", scope_ref="c2"),
        fact(org, "the expired kettle descaling", expires_in=-1),
        fact(org, "pinned: the kettle is descaled on Fridays", pinned=True),
        fact(org, "kettle not embedded yet", embedded=False),
        fact(org, "kettle embedded by another model", model="other-model"),
        fact(other, "the other tenant's kettle descaling"),
    ]
    Memory.objects.bulk_create(rows)
    return org, other


def request(org, *, shared: bool | None, now=None, lists=("semantic", "lexical"), hnsw_index=None) -> RecallRequest:
    return RecallRequest(
        organisation_id=org.pk,
        place=PLACE,
        limit=contextual.CANDIDATES,
        pool=contextual.CANDIDATES,
        lists=lists,
        question=QUESTION,
        query_vector=stub_vector(QUESTION),
        model="stand-in",
        now=now or timezone.now(),
        hnsw_index=hnsw_index,
        count_unembedded=True,
        shared_read=shared,
    )


def statement_rows(plan, *, as_app: bool, tenant_id=None) -> tuple[list[dict], int | None, int | None]:
    with transaction.atomic(), connection.cursor() as cursor:
        if as_app:
            cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
            tenant_activate(organisation_id=tenant_id)
        rows, vec_n, unembedded = run_plan(plan, cursor)
    return sorted(rows, key=lambda row: row["id"]), vec_n, unembedded


@pytest.mark.parametrize("as_app", [True, False], ids=["archivist_app", "owner"])
def test_the_contextual_statement_finds_the_same_rows_reading_the_place_once(tenant, as_app):
    org, _ = tenant
    now = timezone.now()
    per_list = statement_rows(
        contextual.contextual_plan(request(org, shared=False, now=now)), as_app=as_app, tenant_id=org.pk
    )
    once = statement_rows(
        contextual.contextual_plan(request(org, shared=True, now=now)), as_app=as_app, tenant_id=org.pk
    )
    rows, vec_n, unembedded = once
    assert rows and vec_n == contextual.CANDIDATES
    assert unembedded == 2  # one not embedded, one by another model
    assert once == per_list  # every column: ranks, similarity, lexemes, BM25 statistics and neighbour links
    ranked = [contextual.rank_rows(result[0], question=QUESTION, limit=10) for result in (per_list, once)]
    assert [row["id"] for row in ranked[0]] == [row["id"] for row in ranked[1]]


def test_the_hybrid_statement_finds_the_same_rows_reading_the_place_once(tenant):
    org, _ = tenant
    now = timezone.now()
    per_list = statement_rows(candidates_plan(request(org, shared=False, now=now)), as_app=True, tenant_id=org.pk)
    once = statement_rows(candidates_plan(request(org, shared=True, now=now)), as_app=True, tenant_id=org.pk)
    assert once[0] and once == per_list


def test_the_one_read_keeps_to_the_place_the_tenant_and_unexpired_rows(tenant):
    org, other = tenant
    plan = contextual.contextual_plan(request(org, shared=True))
    bodies = {row["body"] for row in statement_rows(plan, as_app=True, tenant_id=org.pk)[0]}
    assert "pinned: the kettle is descaled on Fridays" in bodies
    assert not bodies & {
        "kettle in another channel",
        "the expired kettle descaling",
        "the other tenant's kettle descaling",
    }
    # Positive controls: the same statement finds the expired row before it expired, and the other tenant's row
    # for that tenant.
    earlier = contextual.contextual_plan(request(org, shared=True, now=timezone.now() - timedelta(days=2)))
    assert "the expired kettle descaling" in {
        row["body"] for row in statement_rows(earlier, as_app=True, tenant_id=org.pk)[0]
    }
    theirs = contextual.contextual_plan(request(other, shared=True))
    assert {row["body"] for row in statement_rows(theirs, as_app=True, tenant_id=other.pk)[0]} == {
        "the other tenant's kettle descaling"
    }


def test_the_place_is_read_once_only_when_every_list_would_read_all_of_it(tenant):
    org, _ = tenant

    def reads_once(**kwargs) -> bool:
        chosen = reads_place_once(request(org, **kwargs))
        assert chosen == ("place AS MATERIALIZED" in contextual.contextual_plan(request(org, **kwargs)).sql)
        return chosen

    assert reads_once(shared=None)  # exact vector list and the word list: the default
    assert not reads_once(shared=None, hnsw_index="memories_hnsw_x")  # the index's candidates, not the place
    assert not reads_once(shared=None, lists=("lexical",))
    assert not reads_once(shared=False)
    assert reads_once(shared=True, hnsw_index="memories_hnsw_x")
