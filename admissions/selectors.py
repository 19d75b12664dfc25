"""Reads for admissions: claims with their derived status, who may see them, their history."""

from __future__ import annotations

from django.db.models import Func, IntegerField, Q, QuerySet

from accounts.auth import Principal
from admissions.models import AdmissionRecord, Stance, StanceVersion, Status, SystemClaim
from admissions.status import with_status
from memories.models import Memory


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


RELATED_CLAIMS_SHOWN = 20


def related_claims(*, claim: Memory) -> list[SystemClaim]:
    """Other claims (not tombstones) sharing this one's slug or entity: likely duplicates or contradictions."""
    same = Q(slug=claim.slug)
    if claim.entity:
        same |= Q(entity=claim.entity)
    return list(
        with_status(SystemClaim.objects.filter(same, stance__isnull=True).exclude(pk=claim.pk))
        .select_related("organisation", "superseded_by")
        .defer("embedding", "search_vector", "superseded_by__embedding", "superseded_by__search_vector")
        .order_by("status_rank", "-as_of", "id")[:RELATED_CLAIMS_SHOWN]
    )


def stance_versions(*, stance: Stance) -> list[StanceVersion]:
    """Every version of a stance, newest first, with who made and retired each and the claims it came from."""
    return list(
        StanceVersion.objects.filter(stance=stance)
        .select_related("made_by", "retired_by")
        .prefetch_related("source_links")
        .order_by("-number")
    )
