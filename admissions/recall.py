"""System recall: admitted network claims, as a plane of their own.

Account-scoped recall never reads the `system` bucket, and this plane never
widens it. Reading another organisation's claim into a turn is cross-tenant by
construction, so its eligibility filter replaces the tenant predicate rather
than loosening it:

- a steward's admission stands (derived status `admitted`, never the claimed one);
- the claim is not superseded (a promoted claim lives on as its stance), not a
  promotion tombstone, not erased;
- its `as_of` falls within the freshness window before the render's cutoff.

It is off unless `SYSTEM_RECALL_ENABLED` is set and the reading organisation
has opted in (`Organisation.system_recall_opt_in`).
"""

from __future__ import annotations

from datetime import date, timedelta

from django.conf import settings
from django.db.models import QuerySet

from accounts.models import Organisation
from admissions.models import Status, SystemClaim
from admissions.status import with_status
from memories.planes import SectionLines

SECTION_NAME = "system-recall"
SECTION_TITLE = (
    "Network claims admitted by stewards (outside knowledge, not this organisation's memory; "
    "each labelled with its transparency tier, as-of date and evidence count)"
)


def system_recall_enabled(organisation: Organisation) -> bool:
    """Both switches: the deployment's flag and the organisation's own opt-in."""
    return bool(settings.SYSTEM_RECALL_ENABLED and organisation.system_recall_opt_in)


def eligible_claims(*, today: date) -> QuerySet:
    """Claims any organisation may be shown today, freshest first; the switches are checked by the caller."""
    oldest = today - timedelta(days=settings.SYSTEM_RECALL_FRESHNESS_DAYS)
    return (
        with_status(
            SystemClaim.objects.filter(
                stance__isnull=True,
                superseded_by__isnull=True,
                redacted_at__isnull=True,
                as_of__gte=oldest,
                as_of__lte=today,
            )
        )
        .filter(derived_status=Status.ADMITTED)
        .defer("embedding", "search_vector")
        .order_by("-as_of", "-created_at", "id")
    )


def system_recall(*, organisation: Organisation, today: date, limit: int | None = None) -> list[SystemClaim]:
    """The admitted claims this organisation's turns may see, or [] while either switch is off."""
    if not system_recall_enabled(organisation):
        return []
    return list(eligible_claims(today=today)[: limit or settings.SYSTEM_RECALL_LIMIT])


def claim_line(claim: SystemClaim) -> str:
    count = len(claim.evidence_refs or [])
    refs = "evidence ref" if count == 1 else "evidence refs"
    return f"[{claim.transparency} tier, as of {claim.as_of:%Y-%m-%d}, {count} {refs}] {claim.body}"


def system_recall_section(principal, place, cutoff: date) -> SectionLines | None:
    """The render provider registered by AdmissionsConfig.ready(): a section of its own, or nothing.

    The freshness window is measured back from the render's cutoff, so a replay
    of the same turn sees the same claims.
    """
    claims = system_recall(organisation=principal.organisation, today=cutoff)
    if not claims:
        return None
    return SectionLines(title=SECTION_TITLE, lines=[(claim_line(claim), claim.pk) for claim in claims])
