"""Reads for admissions: claims with their derived status, who may see them, their history."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Func, IntegerField, Q, QuerySet

from admissions.models import AdmissionRecord, Status, SystemClaim
from admissions.status import with_status
from memories.models import Memory

if TYPE_CHECKING:  # config.api imports DRF's views, which import config.api: only the type is needed
    from config.api import Principal


class JsonbArrayLength(Func):
    function = "jsonb_array_length"
    output_field = IntegerField()


def claim_queue() -> QuerySet:
    """Every system row with its status and evidence count, candidates first, oldest first.

    One query for any number of rows: the status is a join onto the view and
    the people a row names are selected with it.
    """
    return (
        with_status(SystemClaim.objects.all())
        .annotate(evidence_count=JsonbArrayLength("evidence_refs"))
        .select_related("organisation", "written_by", "agent", "superseded_by")
        .defer("embedding", "search_vector", "superseded_by__embedding", "superseded_by__search_vector")
        .order_by("status_rank", "created_at", "id")
    )


def claim_visible_to(*, principal: Principal, claim_id) -> SystemClaim | None:
    """The claim if this principal may see it, else None (the API answers 404, never 403).

    Stewards see claims from every organisation; everyone else sees their own
    organisation's, and other organisations' only while a steward's admission stands.
    """
    claims = (
        with_status(SystemClaim.objects.filter(pk=claim_id))
        .select_related("organisation", "written_by", "agent", "superseded_by")
        .defer("superseded_by__embedding", "superseded_by__search_vector")
    )
    if not principal.is_steward:
        claims = claims.filter(Q(organisation=principal.organisation) | Q(admission_status__status=Status.ADMITTED))
    return claims.first()


def claim_history(*, claim: Memory) -> list[AdmissionRecord]:
    """Every record on the claim, oldest first: the full admission history."""
    return list(
        AdmissionRecord.objects.filter(claim_id=claim.pk)
        .select_related("steward", "stance", "tombstone")
        .defer("tombstone__embedding", "tombstone__search_vector")
        .order_by("at", "id")
    )
