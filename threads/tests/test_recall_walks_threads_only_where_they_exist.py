"""Contextual recall walks a thread's episodes in their events' order, a walk the threads app plugs in: where the
organisation has a thread, and not where it has none (there the walk could find nothing, and planning it costs)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta

from django.db import connection
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
from threads.models import Thread
from threads.recall import thread_neighbour_walk, thread_neighbours_sql, threads_seen_forget

THREAD_WALK = "JOIN threads_episodepart p ON p.memory_id = a.id"
PLACE = Place("C-general", "public", ())


def request_for(org, question: str) -> RecallRequest:
    return contextual_request(org, place=PLACE, question=question)


def recall_statement(organisation) -> str:
    """The contextual statement's text as recall sent it (prepared or not)."""
    sent: list[str] = []

    def record(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        recall(organisation=organisation, place=PLACE, question="Biscuit the puppy", mode="contextual")
    return next(sql for sql in sent if "nb AS MATERIALIZED" in sql)


@contextmanager
def threads_walk(walk) -> Iterator[None]:
    """Recall with this walk in the threads app's place (None: no walk at all), then as registered again."""
    registered = contextual.unregister_neighbour_walk("threads")
    if walk is not None:
        contextual.register_neighbour_walk(walk, name="threads")
    try:
        yield
    finally:
        contextual.unregister_neighbour_walk("threads")
        if registered is not None:
            contextual.register_neighbour_walk(registered, name="threads")


def always(request: RecallRequest, tenant: str, predicate: str) -> str:
    return thread_neighbours_sql(tenant, predicate)


def plan_sql(request: RecallRequest, walk=thread_neighbour_walk) -> str:
    with threads_walk(walk):
        return contextual.contextual_plan(request).sql


def contextual_request_without_db() -> RecallRequest:
    return RecallRequest(
        organisation_id="00000000-0000-0000-0000-000000000001",
        place=PLACE,
        limit=contextual.CANDIDATES,
        lists=("lexical",),
        question="puppy",
        now=timezone.now(),
    )


def test_the_threads_app_plugs_its_walk_in():
    assert ("threads", thread_neighbour_walk) in contextual.neighbour_walks()
    assert THREAD_WALK in plan_sql(contextual_request_without_db(), always)  # positive control: the walk's SQL
    assert THREAD_WALK not in plan_sql(contextual_request_without_db(), None)


def test_the_statement_walks_only_where_the_organisation_has_a_thread(post_events, public_channel, org, other_org):
    assert THREAD_WALK not in plan_sql(request_for(org, "puppy"))
    post_events("T-1", [("mona", "We adopted a puppy named Biscuit.")], place=public_channel)
    assert THREAD_WALK in plan_sql(request_for(org, "puppy"))  # positive control: now it has one
    assert THREAD_WALK not in plan_sql(request_for(other_org, "puppy"))  # another organisation's thread is not its


def test_recall_walks_once_the_organisation_has_a_thread(post_events, public_channel, org):
    assert THREAD_WALK not in recall_statement(Organisation.objects.get(pk=org.pk))
    post_events("T-1", [("mona", "We adopted a puppy named Biscuit.")], place=public_channel)
    assert THREAD_WALK in recall_statement(Organisation.objects.get(pk=org.pk))
    assert THREAD_WALK in recall_statement(org.pk)  # an organisation given by its id alone too


def test_without_threads_leaving_the_walk_out_changes_no_row(make_memory, org):
    for body in ("Biscuit is a puppy", "the puppy sleeps a lot", "we walk Biscuit at six", "dinner at eight"):
        written = make_memory(body=body)
        Memory.objects.filter(pk=written.pk).update(embedding=stub_vector(body), embedding_model="stand-in")
    request = request_for(org, "when do we walk the puppy")
    with threads_walk(always):
        walked, _, _ = _execute(contextual.contextual_plan(request))
    with threads_walk(None):
        unwalked, _, _ = _execute(contextual.contextual_plan(request))
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

    def links(walk) -> set[tuple[str, int]]:
        with threads_walk(walk):
            rows, _, _ = _execute(contextual.contextual_plan(request))
        found = contextual._as_json(next(row["bm25"] for row in rows if row["bm25"] is not None))[4]
        return {(str(other), step) for _, other, step in found}

    walked = links(thread_neighbour_walk)
    unwalked = links(None)
    # The reply is the puppy's neighbour by the thread's order (step 1) only through the walk.
    assert any(step == 1 for _, step in walked - unwalked)


def test_a_thread_another_process_created_is_walked_once_the_kept_answer_is_renewed(org):
    assert THREAD_WALK not in plan_sql(request_for(org, "puppy"))  # the answer "no thread" is now kept
    # Created without this process's save signal, as another process's insert is seen here.
    Thread.objects.bulk_create([Thread(organisation=org, external_id="T-elsewhere")])
    assert THREAD_WALK not in plan_sql(request_for(org, "puppy"))
    threads_seen_forget(org.pk)  # as when `THREADS_SEEN_SECONDS` have passed
    assert THREAD_WALK in plan_sql(request_for(org, "puppy"))
