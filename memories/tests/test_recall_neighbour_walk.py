"""Contextual recall's neighbour walk keeps its rule (within the gap, in the place, the nearest
`NEIGHBOUR_SCAN` rows of the tenant) while walking the tenant's newest-first index from each candidate,
never a bitmap read and sort of the tenant per candidate, under the web role's row-level security."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.services import organisation_create
from memories.models import Author, Bucket, Memory, SourceKind
from memories.recall import contextual
from memories.recall.query import run_plan
from memories.scopes import Place
from memories.tests.api.helpers import stub_vector
from memories.tests.recall_plans import contextual_plan
from tenancy.context import tenant_activate
from tenancy.sql import APP_ROLE

PLACE = Place("c1", "public", ())
QUESTION = "when is the kettle descaled"


def fact(org, body: str, created_at, *, scope_ref: str = "c1") -> Memory:
    return Memory(
        organisation=org,
        body=body,
        scope="channel",
        scope_ref=scope_ref,
        bucket=Bucket.LEARNED,
        author=Author.MODEL,
        source_kind=SourceKind.MESSAGE,
        expires_at=timezone.now() + timedelta(days=30),
        embedding=stub_vector(body),
        embedding_model="stand-in",
    )


def written(org, rows: list[tuple[str, object, str]]) -> dict[str, str]:
    """Facts written at the given times, as (body, time, channel); their ids by body."""
    made = Memory.objects.bulk_create([fact(org, body, when, scope_ref=channel) for body, when, channel in rows])
    for memory, (_, when, _) in zip(made, rows, strict=True):
        Memory.objects.filter(pk=memory.pk).update(created_at=when)
    return {memory.body: str(memory.pk) for memory in made}


def plan(org):
    return contextual_plan(org, place=PLACE, question=QUESTION)


def links_as_app(org) -> set[tuple[str, str, int]]:
    """(anchor, neighbour, step) of every link the statement reports, run as archivist_app."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=org.pk)
        rows, _, _ = run_plan(plan(org), cursor)
    bm25 = next(row["bm25"] for row in rows if row["bm25"] is not None)
    links = contextual._as_json(bm25)[4]
    return {(str(anchor), str(other), int(step)) for anchor, other, step in links}


@pytest.fixture
def org(db):
    return organisation_create(slug="neighbour-walk")


def test_a_neighbour_is_within_the_gap_on_either_side(org):
    anchor_time = timezone.now() - timedelta(days=1)
    gap = contextual.NEIGHBOUR_GAP
    ids = written(
        org,
        [
            ("long before", anchor_time - gap - timedelta(seconds=1), "c1"),
            ("just before", anchor_time - gap + timedelta(seconds=1), "c1"),
            ("the kettle is descaled on Fridays", anchor_time, "c1"),
            ("just after", anchor_time + gap - timedelta(seconds=1), "c1"),
            ("long after", anchor_time + gap + timedelta(seconds=1), "c1"),
        ],
    )
    anchor = ids["the kettle is descaled on Fridays"]
    of_anchor = {(other, step) for first, other, step in links_as_app(org) if first == anchor}
    assert (ids["just before"], -1) in of_anchor and (ids["just after"], 1) in of_anchor  # positive controls
    assert not {ids["long before"], ids["long after"]} & {other for other, _ in of_anchor}


def test_a_neighbour_is_among_the_tenants_nearest_rows_only(org):
    """The walk stops after `NEIGHBOUR_SCAN` rows of the tenant whatever their place: a fact of this place
    farther than that, though within the gap, is not a neighbour; the same fact nearer is."""
    anchor_time = timezone.now() - timedelta(days=1)
    step = timedelta(seconds=1)
    busy = [(f"elsewhere {i}", anchor_time + step * (i + 1), "c2") for i in range(contextual.NEIGHBOUR_SCAN)]
    ids = written(
        org,
        [
            ("the kettle is descaled on Fridays", anchor_time, "c1"),
            ("near, here", anchor_time - step, "c1"),
            *busy,
            ("far, here", anchor_time + step * (contextual.NEIGHBOUR_SCAN + 1), "c1"),
        ],
    )
    anchor = ids["the kettle is descaled on Fridays"]
    others = {other for first, other, _ in links_as_app(org) if first == anchor}
    assert ids["near, here"] in others
    assert ids["far, here"] not in others
    assert not {ids[body] for body, _, _ in busy} & others  # another place's rows are walked past, never linked


def neighbour_walk_plan(org) -> str:
    """The part of the statement's plan (as archivist_app) that finds the neighbours written before and after."""
    statement = plan(org)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=org.pk)
        cursor.execute(statement.planner_settings[0])
        cursor.execute("EXPLAIN " + statement.sql, statement.params)
        lines = [row[0] for row in cursor.fetchall()]
    start = next(index for index, line in enumerate(lines) if line.strip() == "CTE nb")
    depth = len(lines[start]) - len(lines[start].lstrip())
    end = next(
        (index for index in range(start + 1, len(lines)) if len(lines[index]) - len(lines[index].lstrip()) <= depth),
        len(lines),
    )
    return "\n".join(lines[start:end])


def test_the_walk_reads_the_newest_first_index_from_each_candidate(org):
    """As in the LoCoMo benchmark: a few tenants of a few hundred facts, where the planner, estimating
    fewer rows before a candidate than the walk's LIMIT, used to read them by bitmap and sort them."""
    now = timezone.now() - timedelta(days=1)
    for tenant in [org, *(organisation_create(slug=f"neighbour-walk-{n}") for n in range(4))]:
        written(tenant, [(f"kettle note {i}", now + timedelta(seconds=i), "c1") for i in range(400)])
    walk = neighbour_walk_plan(org)
    assert walk.count(" using memories_recall_recent_idx on memories_memory") == 2, walk  # before and after
    assert "Bitmap Heap Scan on memories_memory" not in walk, walk
    # No thread here, so no walk through one (threads/tests/test_recall_walks_threads_only_where_they_exist.py).
    assert "threads_threadevent" not in walk


def test_the_planner_settings_end_with_the_statement(org):
    """The rest of the request's transaction plans as before: sorting is allowed again after the statement."""
    written(org, [("the kettle is descaled on Fridays", timezone.now() - timedelta(days=1), "c1")])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=org.pk)
        rows, _, _ = run_plan(plan(org), cursor)
        cursor.execute("SHOW enable_sort")
        after = cursor.fetchone()[0]
        cursor.execute(plan(org).planner_settings[0])
        cursor.execute("SHOW enable_sort")
        during = cursor.fetchone()[0]  # positive control: the setting the statement runs under shows
    assert rows and after == "on" and during == "off"
