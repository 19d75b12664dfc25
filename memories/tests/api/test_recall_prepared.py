"""A contextual recall's statement is prepared once per database session and planned once for every tenant without
an HNSW index: the tenant is a parameter of it, and row-level security still reads the transaction's tenant."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.db import connection, transaction

from accounts.services import organisation_create
from memories.recall import contextual
from memories.recall.candidates import TENANT_PARAMETER, tenant_literal
from memories.recall.query import recall
from memories.scopes import Place
from memories.tests.api.helpers import learned_facts
from memories.tests.recall_plans import contextual_plan, contextual_request, generic_plans_run, since
from tenancy.context import tenant_activate
from tenancy.sql import APP_ROLE

PLACE = Place("c1", "public", ())
QUESTION = "what tea does the team drink"


def seed(org, label: str, count: int = 6) -> set[str]:
    return {str(memory.pk) for memory in learned_facts(org, [f"{label} drinks tea number {i}" for i in range(count)])}


def recall_as_the_web(org, *, question: str = QUESTION) -> set[str]:
    """A contextual recall as a request runs it: its transaction, the web role, the tenant set."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=org.pk)
        result = recall(organisation=org, place=PLACE, question=question, mode="contextual")
    assert result.ranking["used"] == "contextual"
    return {str(row["id"]) for row in result.rows}


@pytest.fixture
def two_tenants(stub_embedder):
    first, second = organisation_create(slug="prepared-first"), organisation_create(slug="prepared-second")
    return (first, seed(first, "Ada")), (second, seed(second, "Bo"))


def test_one_prepared_statement_serves_every_tenant_with_a_generic_plan(db, two_tenants):
    (first, _), (second, _) = two_tenants
    before = generic_plans_run()
    recall_as_the_web(first)
    recall_as_the_web(second)
    recall_as_the_web(first)
    [(text, ran)] = since(before).items()
    assert ran == (3, 0)
    for org in (first, second):
        assert str(org.pk) not in text


def test_each_tenant_recalls_its_own_rows_through_the_shared_statement(db, two_tenants):
    (first, firsts), (second, seconds) = two_tenants
    before = generic_plans_run()
    found_first, found_second = recall_as_the_web(first), recall_as_the_web(second)
    assert found_first and found_first <= firsts
    assert found_second and found_second <= seconds
    assert list(since(before).values()) == [(2, 0)]  # the second tenant's rows came through the same statement


def test_a_connection_that_does_not_prepare_sends_the_statement_whole(db, two_tenants):
    """Behind a pooler in transaction mode Django leaves psycopg's `prepare_threshold` None: nothing is prepared,
    and the recall answers the same."""
    (first, _), _ = two_tenants
    before = generic_plans_run()
    prepared = recall_as_the_web(first)
    assert list(since(before).values()) == [(1, 0)]  # positive control: this connection prepares
    before = generic_plans_run()
    connection.connection.prepare_threshold = None
    try:
        whole = recall_as_the_web(first)
    finally:
        connection.connection.prepare_threshold = 2**31 - 1
    assert since(before) == {}
    assert whole == prepared


def test_a_recall_outside_a_transaction_is_not_prepared(transactional_db, two_tenants):
    """Its planner settings are `SET LOCAL`, which hold only inside a transaction: sent whole, they hold for the
    statement's implicit one."""
    (first, firsts), _ = two_tenants
    before = generic_plans_run()
    assert not connection.in_atomic_block
    rows = recall(organisation=first, place=PLACE, question=QUESTION, mode="contextual").rows
    assert rows and {str(row["id"]) for row in rows} <= firsts
    assert since(before) == {}
    with transaction.atomic():  # positive control: the same recall in a transaction is prepared
        recall(organisation=first, place=PLACE, question=QUESTION, mode="contextual")
    assert list(since(before).values()) == [(1, 0)]


def test_the_tenant_is_a_parameter_only_without_an_hnsw_index(db):
    org = organisation_create(slug="prepared-literal")
    bound = contextual_request(org, place=PLACE, question=QUESTION)
    literal = contextual_plan(org, place=PLACE, question=QUESTION)
    as_bound = contextual.contextual_plan(replace(bound, bound_tenant=True))
    with_index = contextual.contextual_plan(replace(bound, bound_tenant=True, hnsw_index="memories_hnsw_x"))
    assert TENANT_PARAMETER in as_bound.sql and tenant_literal(org.pk) not in as_bound.sql
    assert as_bound.preparable and as_bound.params["tenant"] == str(org.pk)
    for plan in (literal, with_index):
        assert tenant_literal(org.pk) in plan.sql and TENANT_PARAMETER not in plan.sql
        assert not plan.preparable
