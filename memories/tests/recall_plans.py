"""The contextual statement for a test tenant: the hybrid lists over a stand-in vector, as recall builds it."""

from __future__ import annotations

from django.db import connection
from django.utils import timezone

from memories.recall import contextual
from memories.recall.candidates import RecallPlan, RecallRequest
from memories.scopes import Place
from memories.tests.api.helpers import stub_vector


def contextual_request(org, *, place: Place, question: str, shared_read: bool | None = None) -> RecallRequest:
    """`shared_read` forces the one read of the place on or off (None: as recall decides for the tenant)."""
    return RecallRequest(
        organisation_id=org.pk,
        place=place,
        limit=contextual.CANDIDATES,
        pool=contextual.CANDIDATES,
        lists=("semantic", "lexical"),
        question=question,
        query_vector=stub_vector(question),
        model="stand-in",
        now=timezone.now(),
        count_unembedded=True,
        shared_read=shared_read,
    )


def contextual_plan(org, *, place: Place, question: str, shared_read: bool | None = None) -> RecallPlan:
    """The statement `contextual_request` asks for."""
    return contextual.contextual_plan(contextual_request(org, place=place, question=question, shared_read=shared_read))


THE_STATEMENT = "%nb AS MATERIALIZED%"  # only the contextual statement walks neighbours


def generic_plans_run() -> dict[str, tuple[int, int]]:
    """This session's prepared contextual statements: generic plans run and custom plans made, by text."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
            [THE_STATEMENT],
        )
        return {text: (generic, custom) for text, generic, custom in cursor.fetchall()}


def since(before: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """What ran on each statement since `before` (this session may have prepared it in an earlier test)."""
    return {
        text: (generic - before.get(text, (0, 0))[0], custom - before.get(text, (0, 0))[1])
        for text, (generic, custom) in generic_plans_run().items()
        if (generic, custom) != before.get(text)
    }
