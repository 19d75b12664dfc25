"""Writes for admissions: submitting a claim, deciding on it, promoting it to a stance.

Each is a keyword-only action in one transaction. A decision's receipt is the
`AdmissionRecord` itself, written in the same transaction as whatever it causes.
"""

from __future__ import annotations

from datetime import date, datetime

from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Agent, Membership, Organisation, User
from admissions.models import (
    REASON_MAX_CHARS,
    AdmissionRecord,
    Decision,
    Stance,
    Status,
    SystemClaim,
)
from admissions.roles import STEWARD_PERMISSIONS, STEWARDS_GROUP
from admissions.status import with_status
from memories.models import Author, Bucket, ClaimedAdmission, Memory, SourceKind
from memories.services import memory_point_to_replacement, memory_remember

# Which decisions each derived status accepts. Rejected is final until someone
# challenges it; revoking is for an admission only.
ALLOWED_FROM = {
    Decision.ADMIT: {Status.CANDIDATE, Status.CHALLENGED},
    Decision.REJECT: {Status.CANDIDATE, Status.CHALLENGED},
    Decision.CHALLENGE: {Status.CANDIDATE, Status.ADMITTED, Status.REJECTED},
    Decision.REVOKE: {Status.ADMITTED},
    Decision.PROMOTE: {Status.ADMITTED},
}


class DecisionRefused(ValidationError):
    """A decision the rules do not allow. `code` says which rule, so bulk actions can count by reason."""

    OWN_CLAIM = "own_claim"
    TOMBSTONE = "tombstone"
    NOT_A_CLAIM = "not_a_claim"
    SUPERSEDED = "superseded"
    ERASED = "erased"
    TRANSITION = "transition"

    def __init__(self, message: str, code: str):
        super().__init__({"claim": [ValidationError(message, code=code)]})
        self.refusal = code
        self.sentence = message


def is_steward(user: User | None) -> bool:
    if user is None or not getattr(user, "pk", None):
        return False
    return Membership.objects.filter(user_id=user.pk, role=Membership.Role.STEWARD).exists()


def is_author(*, claim: Memory, user: User) -> bool:
    """Four eyes: the person who wrote the claim. An agent's claim has no person author."""
    return claim.written_by_id is not None and claim.written_by_id == user.pk


def claim_submit(
    *,
    organisation: Organisation,
    body: str,
    slug: str,
    entity: str,
    transparency: str,
    as_of: date,
    evidence_refs: list,
    admission: str = ClaimedAdmission.CANDIDATE,
    agent: Agent | None = None,
    user: User | None = None,
    source_ref: str = "",
    source_label: str = "",
    source_run_id: str = "",
) -> Memory:
    """Store a system claim as a candidate. Whatever `admission` the author claims, only records count."""
    if (agent is None) == (user is None):
        raise ValueError("A claim is submitted by exactly one of an agent or a person.")
    return memory_remember(
        organisation=organisation,
        bucket=Bucket.SYSTEM,
        author=Author.MODEL if agent else Author.PERSON,
        body=body,
        source_kind=SourceKind.RUN if agent else SourceKind.PERSON,
        agent=agent,
        written_by=user,
        source_ref=source_ref,
        source_label=source_label,
        source_run_id=source_run_id,
        system_fields=dict(
            slug=(slug or "").strip(),
            entity=(entity or "").strip() or None,
            transparency=transparency,
            as_of=as_of,
            admission=admission,
            evidence_refs=evidence_refs,
        ),
    )


def _clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["A decision needs a reason for its receipt."]})
    if len(reason) > REASON_MAX_CHARS:
        raise ValidationError({"reason": [f"The reason is {len(reason)} characters; the limit is {REASON_MAX_CHARS}."]})
    return reason


def _locked_claim(*, claim: Memory, steward: User, decision: str) -> SystemClaim:
    """The claim, locked and annotated with its status, after every rule but the transition."""
    if not is_steward(steward):
        raise PermissionDenied("Only a steward records decisions on system claims.")
    # Two stewards deciding the same claim at once would each pass the
    # transition check against the same status; the row lock serialises them.
    Memory.objects.select_for_update(no_key=True).filter(pk=claim.pk).first()
    row = with_status(SystemClaim.objects.filter(pk=claim.pk)).first()
    if row is None:
        raise DecisionRefused("Only a system claim can be decided.", DecisionRefused.NOT_A_CLAIM)
    if row.stance is not None:
        raise DecisionRefused(
            "This is a promotion tombstone; it cannot be admitted, rejected or challenged.", DecisionRefused.TOMBSTONE
        )
    if is_author(claim=row, user=steward):
        raise DecisionRefused("You wrote this claim; another steward must decide it.", DecisionRefused.OWN_CLAIM)
    if row.redacted_at is not None:
        raise DecisionRefused("This claim was erased.", DecisionRefused.ERASED)
    if row.superseded_by_id is not None:
        raise DecisionRefused(
            "This claim was superseded; decide on its newest version instead.", DecisionRefused.SUPERSEDED
        )
    if row.derived_status not in ALLOWED_FROM[decision]:
        allowed = ", ".join(sorted(ALLOWED_FROM[decision]))
        raise DecisionRefused(
            f"A {row.derived_status} claim cannot take '{decision}'; it applies to: {allowed}.",
            DecisionRefused.TRANSITION,
        )
    return row


def admission_decide(
    *, claim: Memory, steward: User, decision: str, reason: str, now: datetime | None = None
) -> AdmissionRecord:
    """Record a steward's admit, reject, challenge or revoke on a claim."""
    if decision not in (Decision.ADMIT, Decision.REJECT, Decision.CHALLENGE, Decision.REVOKE):
        raise ValidationError({"decision": ["The decision must be admit, reject, challenge or revoke."]})
    reason = _clean_reason(reason)
    with transaction.atomic():
        row = _locked_claim(claim=claim, steward=steward, decision=decision)
        return AdmissionRecord.objects.create(
            organisation_id=row.organisation_id,
            claim_id=row.pk,
            decision=decision,
            steward=steward,
            reason=reason,
            at=now or timezone.now(),
        )


def stance_create(*, id: str, title: str, body: str, reviewed_by: User, now: datetime | None = None) -> Stance:
    """A reviewed stance; the reviewer is the steward creating it."""
    if not is_steward(reviewed_by):
        raise PermissionDenied("Only a steward reviews stances.")
    stance = Stance(
        id=(id or "").strip(),
        title=(title or "").strip(),
        body=(body or "").strip(),
        reviewed_by=reviewed_by,
        reviewed_at=now or timezone.now(),
    )
    stance.full_clean(validate_unique=False)
    with transaction.atomic():
        if Stance.objects.filter(pk=stance.id).exists():
            raise ValidationError({"id": [f"A stance {stance.id!r} already exists; pick it instead."]})
        stance.save(force_insert=True)
    return stance


def tombstone_body(*, stance: Stance) -> str:
    return f"Promoted to the reviewed stance {stance.id}: {stance.title}"[:2000]


def claim_promote(
    *, claim: Memory, steward: User, stance: Stance, reason: str, now: datetime | None = None
) -> tuple[Memory, AdmissionRecord]:
    """Promote an admitted claim to a stance, all in one transaction.

    Writes a tombstone system row naming the stance and carrying the claim's
    evidence, points the claim's `superseded_by` at it, and records the decision.
    """
    reason = _clean_reason(reason)
    now = now or timezone.now()
    with transaction.atomic():
        row = _locked_claim(claim=claim, steward=steward, decision=Decision.PROMOTE)
        tombstone = memory_remember(
            organisation=row.organisation,
            bucket=Bucket.SYSTEM,
            author=Author.PERSON,
            body=tombstone_body(stance=stance),
            source_kind=SourceKind.PERSON,
            # The steward may belong to another organisation, so the row does
            # not name them as its writer; the promotion record does.
            source_ref=f"promotion:{row.pk}",
            source_label=f"steward:{steward.username}",
            system_fields=dict(
                slug=row.slug,
                entity=row.entity,
                transparency=row.transparency,
                as_of=row.as_of,
                # A tombstone claims nothing: it points at a stance, and its
                # derived status is `tombstone` whatever this says.
                admission=ClaimedAdmission.CANDIDATE,
                evidence_refs=row.evidence_refs,
                stance=stance.pk,
            ),
            now=now,
        )
        memory_point_to_replacement(memory=row, replacement=tombstone, actor=steward, now=now)
        record = AdmissionRecord.objects.create(
            organisation_id=row.organisation_id,
            claim_id=row.pk,
            decision=Decision.PROMOTE,
            steward=steward,
            reason=reason,
            at=now,
            stance=stance,
            tombstone=tombstone,
        )
    return tombstone, record


def stewards_group_ensure() -> Group:
    """The Stewards group holding exactly STEWARD_PERMISSIONS; idempotent.

    Run after every migrate (and after a test flush, which empties auth tables),
    so the group never exists without its permissions.
    """
    group, _ = Group.objects.get_or_create(name=STEWARDS_GROUP)
    query = Q()
    for app_label, codename in STEWARD_PERMISSIONS:
        query |= Q(content_type__app_label=app_label, codename=codename)
    wanted = set(Permission.objects.filter(query).values_list("pk", flat=True))
    if set(group.permissions.values_list("pk", flat=True)) != wanted:
        group.permissions.set(wanted)
    return group


def steward_access_sync(*, user: User) -> None:
    """Give a steward the admin and the Stewards group; take both away when the role goes.

    `is_staff` is only taken back from someone who had it through the group,
    so staff access granted for another reason survives a role change.
    """
    in_group = user.groups.filter(name=STEWARDS_GROUP).exists()
    if is_steward(user):
        if not in_group:
            user.groups.add(stewards_group_ensure())
        if not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
    elif in_group:
        user.groups.remove(*Group.objects.filter(name=STEWARDS_GROUP))
        if user.is_staff and not user.is_superuser:
            user.is_staff = False
            user.save(update_fields=["is_staff"])
