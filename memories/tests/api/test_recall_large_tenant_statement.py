"""Issue 15, the large tenants' statement: the word list read through `memories_word_list` (a definer
function, so the GIN index serves it under row-level security) returns exactly the rows and ranks the
inline word list did, never another organisation's and never a row the place, scope, agent, expiry or
time rules exclude; the other-model count ranges over both sides of the current model and counts what
`<>` counted; the candidates' rows are found by key with the same results."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.services import agent_create, organisation_create
from memories.db.indexes import DROP_WORD_LIST_FUNCTION, WORD_LIST_FUNCTION
from memories.models import Author, Bucket, Memory, SourceKind
from memories.recall import candidates, contextual
from memories.recall.candidates import RecallRequest, candidates_plan, recall_predicate
from memories.recall.query import run_plan
from memories.scopes import Place
from memories.tests.api.helpers import stub_vector
from tenancy.context import tenant_activate
from tenancy.sql import APP_ROLE

CHANNEL = Place("c1", "public", ())
DM = Place("d-mona", "dm", ("mona",))
QUESTION = "when is the kettle descaled"
LEARNED = {"bucket": Bucket.LEARNED, "author": Author.MODEL, "source_kind": SourceKind.MESSAGE}


def fact(org, body, *, scope="channel", scope_ref="c1", expires_in=30, model="stand-in", embedded=True, **extra):
    vector = {"embedding": stub_vector(body), "embedding_model": model} if embedded else {}
    if scope == "person":
        extra.setdefault("subject_type", "user")
        extra.setdefault("subject_id", scope_ref)
    return Memory(
        organisation=org,
        body=body,
        scope=scope,
        scope_ref=scope_ref,
        expires_at=timezone.now() + timedelta(days=expires_in),
        **LEARNED,
        **vector,
        **extra,
    )


@pytest.fixture
def tenants(db):
    org = organisation_create(slug="word-list")
    other = organisation_create(slug="word-list-other")
    mine, _ = agent_create(organisation=org, name="mine")
    theirs, _ = agent_create(organisation=org, name="theirs")
    earlier = timezone.now() - timedelta(days=10)
    rows = [
        fact(org, f"the kettle note {i}" + " kettle" * (i % 4), occurred_at=earlier + timedelta(hours=i))
        for i in range(30)
    ]
    rows += [fact(org, f"workspace kettle descaling {i}", scope="workspace", scope_ref="") for i in range(6)]
    rows += [
        fact(org, "kettle in another channel", scope_ref="c2"),
        fact(org, "the expired kettle descaling", expires_in=-1),
        fact(org, "mona's kettle is descaled weekly", scope="person", scope_ref="mona"),
        fact(org, "max's kettle is descaled daily", scope="person", scope_ref="max"),
        fact(org, "my agent's kettle", agent=mine),
        fact(org, "their agent's kettle", agent=theirs),
        fact(org, "an old kettle descaling", occurred_at=timezone.now() - timedelta(days=400)),
        fact(org, "kettle not embedded yet", embedded=False),
        fact(org, "kettle embedded by a model sorting before", model="a-model"),
        fact(org, "kettle embedded by a model sorting after", model="zz-model"),
        fact(other, "the other tenant's kettle descaling"),
        fact(other, "the other tenant's workspace kettle", scope="workspace", scope_ref=""),
    ]
    Memory.objects.bulk_create(rows)
    with connection.cursor() as cursor:
        # Distinct times (bulk_create writes one `now` for all): no tie at a list's cut, where the inline list's
        # choice was arbitrary.
        cursor.execute(
            "UPDATE memories_memory m SET created_at = now() - n.position * interval '1 minute'"
            " FROM (SELECT id, row_number() OVER (ORDER BY body) AS position FROM memories_memory) n WHERE n.id = m.id"
        )
    erased = Memory.objects.filter(body="the kettle note 3 kettle kettle kettle")
    erased.update(redacted_at=timezone.now(), body="", embedding=None)
    with connection.cursor() as cursor:
        # The planner reads these rows' statistics, not those an earlier module's committed rows left on this
        # worker's database (rolled back with the test).
        cursor.execute("ANALYZE memories_memory")
    return org, other, mine


def request(org, *, place=CHANNEL, agent=None, now=None, pool=8, **filters) -> RecallRequest:
    return RecallRequest(
        organisation_id=org.pk,
        place=place,
        agent_id=agent.pk if agent else None,
        limit=pool,
        pool=pool,
        lists=("semantic", "lexical"),
        question=QUESTION,
        query_vector=stub_vector(QUESTION),
        model="stand-in",
        now=now or timezone.now(),
        count_unembedded=True,
        shared_read=False,
        **filters,
    )


def as_app(sql: str, params: dict, tenant_id) -> list[tuple]:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=tenant_id)  # None: no tenant (the test's transaction may hold one)
        cursor.execute(sql, params)
        return cursor.fetchall()


def word_lists(req: RecallRequest, tenant_id) -> tuple[list[tuple], list[tuple]]:
    """The `lex` list (id, rank) through the definer function, and inline over the table as before issue 15."""
    found = candidates.candidate_ctes(req)
    rows = f"memories_memory m WHERE {recall_predicate(req)}"
    params = {**found.params, "question": req.question}
    lists = []
    for lex in (candidates._lexical_cte(rows, through_function=True), candidates._lexical_cte(rows)):
        sql = f"WITH {candidates.TSQUERY}, {lex} SELECT id, rank FROM lex ORDER BY rank"
        lists.append(as_app(sql, params, tenant_id))
    return lists[0], lists[1]


CASES = {
    "channel": {},
    "dm with mona": {"place": DM},
    "an agent": {"agent": "mine"},
    "time filters": {"occurred_after": timedelta(days=-30), "occurred_before": timedelta(days=-9, hours=-12)},
    "earlier now": {"now": timedelta(days=-2)},
    "a long pool": {"pool": 100},
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_word_list_through_the_function_equals_the_inline_one(tenants, case):
    org, _, mine = tenants
    now = timezone.now()
    options = {
        key: (now + value if isinstance(value, timedelta) else mine if value == "mine" else value)
        for key, value in case.items()
    }
    through_function, inline = word_lists(request(org, **options), org.pk)
    assert through_function  # a control: the question's words are found
    assert through_function == inline


def test_a_caller_without_a_tenant_setting_gets_the_same_list_inline(tenants):
    # The owner in a job: no policy applies and no tenant is set, so the function finds nothing and the
    # branch the setting gates gives the inline list.
    org, _, _ = tenants
    req = request(org, pool=100)
    rows = f"memories_memory m WHERE {recall_predicate(req)}"
    params = {**candidates.candidate_ctes(req).params, "question": req.question}
    found = []
    for lex in (candidates._lexical_cte(rows, through_function=True), candidates._lexical_cte(rows)):
        with transaction.atomic(), connection.cursor() as cursor:
            tenant_activate(organisation_id=None)
            cursor.execute(f"WITH {candidates.TSQUERY}, {lex} SELECT id, rank FROM lex ORDER BY rank", params)
            found.append(cursor.fetchall())
    assert found[0] and found[0] == found[1]


def bodies_found(req: RecallRequest, tenant_id) -> set[str]:
    ids = [row[0] for row in word_lists(req, tenant_id)[0]]
    return set(Memory.objects.filter(pk__in=ids).values_list("body", flat=True))


def test_the_function_keeps_to_the_tenant_of_the_transaction(tenants):
    org, other, _ = tenants
    mine = bodies_found(request(org, pool=100), org.pk)
    assert "workspace kettle descaling 0" in mine
    assert not {body for body in mine if "other tenant" in body}
    # Positive control: the same words, the other tenant set, find its rows.
    assert bodies_found(request(other, pool=100), other.pk) == {
        "the other tenant's kettle descaling",
        "the other tenant's workspace kettle",
    }
    # The tenant comes from the transaction's setting, never from the statement: org's statement run with
    # the other tenant set finds only the other tenant's rows, and with no tenant set finds none.
    assert bodies_found(request(org, pool=100), other.pk) == {
        "the other tenant's kettle descaling",
        "the other tenant's workspace kettle",
    }
    assert bodies_found(request(org, pool=100), None) == set()


def test_the_function_keeps_to_the_place_scope_agent_and_expiry(tenants):
    org, _, mine = tenants
    found = bodies_found(request(org, agent=mine, pool=100), org.pk)
    assert {"workspace kettle descaling 0", "my agent's kettle"} <= found
    assert not found & {
        "kettle in another channel",
        "the expired kettle descaling",
        "mona's kettle is descaled weekly",
        "their agent's kettle",
        "",  # the erased row
    }
    # Positive controls: each excluded row is found where the rules allow it.
    assert "kettle in another channel" in bodies_found(request(org, place=Place("c2", "public", ()), pool=100), org.pk)
    assert "the expired kettle descaling" in bodies_found(
        request(org, now=timezone.now() - timedelta(days=2), pool=100), org.pk
    )
    in_dm = bodies_found(request(org, place=DM, pool=100), org.pk)
    assert "mona's kettle is descaled weekly" in in_dm and "max's kettle is descaled daily" not in in_dm
    assert "their agent's kettle" in bodies_found(request(org, pool=100), org.pk)  # no agent: every agent's
    recent = bodies_found(request(org, pool=100, occurred_after=timezone.now() - timedelta(days=30)), org.pk)
    assert "an old kettle descaling" not in recent
    assert "an old kettle descaling" in bodies_found(request(org, pool=100), org.pk)


def test_the_function_runs_as_its_owner_with_its_search_path_pinned(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.prosecdef, p.proconfig, has_function_privilege('public', p.oid, 'EXECUTE'),"
            " has_function_privilege(%s, p.oid, 'EXECUTE') FROM pg_proc p WHERE p.proname = 'memories_word_list'",
            [APP_ROLE],
        )
        definer, config, public_may, app_may = cursor.fetchone()
    assert definer and app_may and not public_may
    assert config == ["search_path=pg_catalog, public, pg_temp"]


def test_the_function_sql_is_undone_and_redone_cleanly(db):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(DROP_WORD_LIST_FUNCTION)
        cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = 'memories_word_list'")
        assert cursor.fetchone() == (0,)
        cursor.execute(WORD_LIST_FUNCTION)
        cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = 'memories_word_list'")
        assert cursor.fetchone() == (1,)


def test_the_other_model_count_counts_both_sides_of_the_current_model(tenants):
    org, _, _ = tenants
    rows, _, unembedded = _statement(candidates_plan(request(org)), org.pk)
    assert rows
    assert unembedded == 3  # one not embedded, one model sorting before the current one, one after
    # Positive control: with the current model named as one of the others, its rows count instead.
    _, _, counted = _statement(candidates_plan(replace(request(org), model="zz-model")), org.pk)
    assert counted > 3


def test_the_other_model_count_is_served_by_its_index(tenants):
    org, _, _ = tenants
    plan = candidates_plan(request(org))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}; SET LOCAL enable_seqscan = off")
        tenant_activate(organisation_id=org.pk)
        cursor.execute("EXPLAIN " + plan.sql, plan.params)
        lines = "\n".join(row[0] for row in cursor.fetchall())
    assert "memories_recall_model_idx" in lines
    assert "embedding_model)::text < 'stand-in'" in lines and "embedding_model)::text > 'stand-in'" in lines


@pytest.mark.parametrize("planner", [candidates_plan, contextual.contextual_plan], ids=["hybrid", "contextual"])
def test_the_candidates_rows_found_by_key_are_every_candidate(tenants, planner):
    org, _, _ = tenants
    rows, vec_n, _ = _statement(planner(request(org, pool=40)), org.pk)
    assert vec_n and rows
    found = {str(row["id"]) for row in rows}
    # The same statement joining the candidates' rows the old way (`m.id = c.id` alone): the same rows.
    plan = planner(request(org, pool=40))
    keyed = f" AND {candidates.by_key('cand')}"
    assert keyed in plan.sql
    rows_old, _, _ = _statement(replace(plan, sql=plan.sql.replace(keyed, "")), org.pk)
    assert {str(row["id"]) for row in rows_old} == found


def _statement(plan, tenant_id):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=tenant_id)
        return run_plan(plan, cursor)
