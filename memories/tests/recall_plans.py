"""The contextual statement for a test tenant: the hybrid lists over a stand-in vector, as recall builds it."""

from __future__ import annotations

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
