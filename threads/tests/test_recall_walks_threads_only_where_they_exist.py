"""Issue 15: contextual recall walks a thread's neighbours only in an organisation that has a thread
(`Organisation.has_threads`): elsewhere the walk could find nothing, and leaving it out of the statement
saves about a millisecond of planning. Where threads exist, the walk is there and finds them."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Organisation
from memories.models import Memory, SourceKind
from memories.recall import contextual
from memories.recall.candidates import RecallRequest
from memories.recall.query import _execute, recall
from memories.scopes import Place
from memories.tests.api.helpers import stub_vector
from memories.tests.recall_plans import contextual_request
from threads.consolidation import thread_consolidate

THREAD_WALK = "JOIN threads_threadevent e ON e.id = a.source_event_id"
PLACE = Place("C-general", "public", ())


def request_for(org, question: str) -> RecallRequest:
    return contextual_request(org, place=PLACE, question=question)


def recall_statement(organisation) -> str:
    with CaptureQueriesContext(connection) as captured:
        recall(organisation=organisation, place=PLACE, question="Biscuit the puppy", mode="contextual")
    return next(query["sql"] for query in captured.captured_queries if "nb AS MATERIALIZED" in query["sql"])


def test_the_statement_has_the_walk_only_when_asked_for(org):
    request = request_for(org, "puppy")
    assert THREAD_WALK in contextual.build_plan(request).sql  # the default: walk
    assert THREAD_WALK not in contextual.build_plan(replace(request, thread_neighbours=False)).sql


def test_recall_leaves_the_walk_out_until_the_organisation_has_a_thread(post_events, public_channel, org):
    assert THREAD_WALK not in recall_statement(Organisation.objects.get(pk=org.pk))
    post_events("T-1", [("mona", "We adopted a puppy named Biscuit.")], place=public_channel)
    # Control: the same recall once a thread exists walks it.
    assert THREAD_WALK in recall_statement(Organisation.objects.get(pk=org.pk))
    # An organisation given by its id alone walks too: nothing says it has no thread.
    assert THREAD_WALK in recall_statement(org.pk)


def test_without_threads_the_walk_changes_no_row(make_memory, org):
    for body in ("Biscuit is a puppy", "the puppy sleeps a lot", "we walk Biscuit at six", "dinner at eight"):
        written = make_memory(body=body)
        Memory.objects.filter(pk=written.pk).update(embedding=stub_vector(body), embedding_model="stand-in")
    request = request_for(org, "when do we walk the puppy")
    walked, _, _ = _execute(contextual.build_plan(request))
    unwalked, _, _ = _execute(contextual.build_plan(replace(request, thread_neighbours=False)))
    assert len(walked) >= 4  # positive control: there are rows to compare
    assert walked == unwalked


def test_with_threads_the_walk_finds_what_it_alone_finds(episodes_on, post_events, public_channel, org):
    thread = post_events(
        "T-walk",
        [("mona", "We adopted a puppy named Biscuit."), ("arthur", "Lovely, what breed?")],
        place=public_channel,
    )
    thread_consolidate(thread_id=thread.pk)
    # Written two days apart, so only the thread's order, not the time they were written, makes them neighbours.
    first = Memory.objects.get(source_kind=SourceKind.EPISODE, body__contains="Biscuit")
    Memory.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(days=2))
    request = replace(
        request_for(org, "Biscuit"), lists=("lexical",), query_vector=None, model="", count_unembedded=False
    )

    def links(plan) -> set[tuple[str, int]]:
        rows, _, _ = _execute(plan)
        found = contextual._as_json(next(row["bm25"] for row in rows if row["bm25"] is not None))[4]
        return {(str(other), step) for _, other, step in found}

    walked = links(contextual.build_plan(request))
    unwalked = links(contextual.build_plan(replace(request, thread_neighbours=False)))
    # The reply is the puppy's neighbour by the thread's order (step 1) only through the walk.
    assert any(step == 1 for _, step in walked - unwalked)
