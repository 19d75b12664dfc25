"""System recall: admitted network claims, as a plane of their own that never widens account-scoped recall."""

# Account-scoped recall never reads the `system` bucket, and this plane never
# widens it. Reading another organisation's claim into a turn is cross-tenant by
# construction, so its eligibility filter replaces the tenant predicate rather
# than loosening it:
#
# - a steward's admission stands (derived status `admitted`, never the claimed one);
# - the claim is not superseded (a promoted claim lives on as its stance), not a
#   promotion tombstone, not erased;
# - its `as_of` falls within the freshness window before the render's cutoff.
#
# A claim promoted to a stance is superseded by its tombstone, so it leaves
# this plane; the stance's live version takes its place, under the same
# switches, freshness window and limit, marked as a reviewed stance. A stance
# whose source claim was erased is not shown: its text was taken from that claim.
#
# Off unless `SYSTEM_RECALL_ENABLED` is set and the reading organisation opted in (`system_recall_opt_in`).

from __future__ import annotations

from datetime import date, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet, Subquery

from accounts.models import Organisation
from admissions.models import LIVE_VERSION, StanceSource, StanceVersion, Status, SystemClaim
from admissions.status import with_status
from memories.db.predicates import current_q
from memories.turns.sections import SectionLines

SECTION_NAME = "system-recall"
SECTION_TITLE = (
    "Network claims admitted by stewards and stances they reviewed (outside knowledge, not this "
    "organisation's memory; each labelled with its transparency tier, as-of date and evidence count)"
)


def system_recall_enabled(organisation: Organisation) -> bool:
    """Both switches: the deployment's flag and the organisation's own opt-in."""
    return bool(settings.SYSTEM_RECALL_ENABLED and organisation.system_recall_opt_in)


def eligible_claims(*, today: date) -> QuerySet:
    """Claims any organisation may be shown today, freshest first; the switches are checked by the caller."""
    oldest = today - timedelta(days=settings.SYSTEM_RECALL_FRESHNESS_DAYS)
    return (
        with_status(
            # Current (not erased, not corrected), not a tombstone, and dated within the freshness window.
            SystemClaim.objects.filter(current_q(), stance__isnull=True, as_of__range=(oldest, today))
        )
        .filter(derived_status=Status.ADMITTED)
        .defer("embedding", "search_vector")
        .order_by("-as_of", "-created_at", "id")
    )


def eligible_stances(*, today: date) -> QuerySet:
    """Live stance versions any organisation may be shown today, freshest first."""
    oldest = today - timedelta(days=settings.SYSTEM_RECALL_FRESHNESS_DAYS)
    erased_source = StanceSource.objects.filter(version=OuterRef("pk"), claim__redacted_at__isnull=False)
    return (
        StanceVersion.objects.filter(LIVE_VERSION, as_of__gte=oldest, as_of__lte=today)
        .exclude(Exists(erased_source))
        # The claim a rendered line is traced to: erasing it empties the recorded line.
        .annotate(
            latest_source_id=Subquery(
                StanceSource.objects.filter(version=OuterRef("pk")).order_by("-id").values("claim_id")[:1]
            )
        )
        .order_by("-as_of", "-made_at", "id")
    )


def system_recall(
    *, organisation: Organisation, today: date, limit: int | None = None
) -> list[SystemClaim | StanceVersion]:
    """What this organisation's turns may see (claims and live stances, freshest first), or [] while off."""
    if not system_recall_enabled(organisation):
        return []
    limit = limit or settings.SYSTEM_RECALL_LIMIT
    claims = list(eligible_claims(today=today)[:limit])
    stances = list(eligible_stances(today=today)[:limit])
    merged = sorted([*claims, *stances], key=lambda item: (item.as_of, _when(item)), reverse=True)
    return merged[:limit]


def _when(item) -> object:
    return item.made_at if isinstance(item, StanceVersion) else item.created_at


def claim_line(claim: SystemClaim) -> str:
    count = len(claim.evidence_refs or [])
    refs = "evidence ref" if count == 1 else "evidence refs"
    return f"[{claim.transparency} tier, as of {claim.as_of:%Y-%m-%d}, {count} {refs}] {claim.body}"


def stance_line(version: StanceVersion) -> str:
    count = len(version.evidence_refs or [])
    refs = "evidence ref" if count == 1 else "evidence refs"
    return (
        f"[reviewed stance {version.stance_id}, {version.transparency} tier, as of {version.as_of:%Y-%m-%d}, "
        f"{count} {refs}] {version.text}"
    )


def recall_line(item: SystemClaim | StanceVersion) -> tuple[str, object]:
    """A line and the claim it traces to, so erasing that claim empties the recorded line."""
    if isinstance(item, StanceVersion):
        return stance_line(item), item.latest_source_id  # type: ignore[attr-defined]  # annotated by eligible_stances
    return claim_line(item), item.pk


def system_recall_section(principal, place, cutoff: date) -> SectionLines | None:
    """The render provider registered by AdmissionsConfig.ready(): a section of its own, or nothing.

    The freshness window is measured back from the render's cutoff, so a replay
    of the same turn sees the same claims.
    """
    claims = system_recall(organisation=principal.organisation, today=cutoff)
    if not claims:
        return None
    return SectionLines(title=SECTION_TITLE, lines=[recall_line(item) for item in claims])
