"""Writes for admissions: submitting a claim, deciding on it, promoting it to a stance.

Each is a keyword-only action in one transaction. A decision's receipt is the
`AdmissionRecord` itself, written in the same transaction as whatever it causes.
"""

from __future__ import annotations

from datetime import date, datetime

from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Agent, Membership, Organisation, User
from admissions.labels import steward_label
from admissions.models import (
    REASON_MAX_CHARS,
    AdmissionRecord,
    Decision,
    Stance,
    StanceSource,
    StanceVersion,
    Status,
    SystemClaim,
)
from admissions.roles import STEWARD_PERMISSIONS, STEWARDS_GROUP
from admissions.status import with_status
from memories.models import Author, Bucket, ClaimedAdmission, Memory, SourceKind
from memories.services import memory_point_to_replacement
from memories.writer import WORKER, MemoryDraft, Writer, memory_remember

# Which decisions each derived status accepts. Rejected is final until someone
# challenges it; revoking is for an admission only.
ALLOWED_FROM: dict[str, set[Status]] = {
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
    draft = MemoryDraft(
        organisation=organisation,
        bucket=Bucket.SYSTEM,
        author=Author.MODEL if agent else Author.PERSON,
        body=body,
        source_kind=SourceKind.RUN if agent else SourceKind.PERSON,
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
    return memory_remember(draft, writer=Writer(agent=agent, person=user))


def _clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["A decision needs a reason for its receipt."]})
    if len(reason) > REASON_MAX_CHARS:
        raise ValidationError({"reason": [f"The reason is {len(reason)} characters; the limit is {REASON_MAX_CHARS}."]})
    return reason


def decision_blocker(*, claim: Memory, user: User | None = None, user_id=None) -> DecisionRefused | None:
    """Why this steward may take no decision at all on this claim now, or None.

    The claim page and the queue print its sentence in place of the buttons;
    the services raise it. Which decisions the status allows is `ALLOWED_FROM`.
    A list passes `user_id` (the viewer's id, annotated once) to stay at one query.
    """
    if claim.stance is not None:
        return DecisionRefused(
            "This row only points at a stance (a promotion left it); it cannot be admitted, rejected or challenged.",
            DecisionRefused.TOMBSTONE,
        )
    user_id = user.pk if user is not None else user_id
    if claim.written_by_id is not None and claim.written_by_id == user_id:
        return DecisionRefused("You wrote this claim; another steward must decide it.", DecisionRefused.OWN_CLAIM)
    if claim.redacted_at is not None:
        return DecisionRefused("This claim was erased.", DecisionRefused.ERASED)
    if claim.superseded_by_id is not None:
        return DecisionRefused(
            "This claim was superseded; decide on its newest version instead.", DecisionRefused.SUPERSEDED
        )
    return None


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
    blocker = decision_blocker(claim=row, user=steward)
    if blocker is not None:
        raise blocker
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


# What a promotion tombstone takes over from the claim it replaces, so it
# stands in the claim's place: same slug and entity, same evidence.
TOMBSTONE_KEEPS = ("slug", "entity", "transparency", "as_of", "evidence_refs")


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
            MemoryDraft(
                organisation=row.organisation,
                bucket=Bucket.SYSTEM,
                author=Author.PERSON,
                body=tombstone_body(stance=stance),
                source_kind=SourceKind.PERSON,
                source_ref=f"promotion:{row.pk}",
                source_label=steward_label(steward),
                system_fields={
                    **{name: getattr(row, name) for name in TOMBSTONE_KEEPS},
                    # A tombstone claims nothing: it points at a stance, and its
                    # derived status is `tombstone` whatever this says.
                    "admission": ClaimedAdmission.CANDIDATE,
                    "stance": stance.pk,
                },
            ),
            # The steward may belong to another organisation, so the row does not name them as its writer
            # (the promotion record does): the worker writes it.
            writer=WORKER,
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
        _version_from_promotion(stance=stance, claim=row, steward=steward, reason=reason, now=now)
    return tombstone, record


def _merged_evidence(*lists) -> list:
    merged: list = []
    for refs in lists:
        for ref in refs or []:
            if ref not in merged:
                merged.append(ref)
    return merged


def _write_version(*, previous: StanceVersion | None, sources: list, **fields) -> StanceVersion:
    """Write the next version of a stance and point the previous head at it, in the caller's transaction."""
    version = StanceVersion(number=previous.number + 1 if previous else 1, **fields)
    version.full_clean(exclude=["stance", "made_by", "superseded_by", "retired_by"], validate_unique=False)
    if previous is not None:
        # One current version per stance is a unique index, checked row by
        # row; the foreign key is checked at commit. So the old head points at
        # the new version's id before that version is inserted.
        with connection.cursor() as cursor:
            cursor.execute("SELECT nextval(pg_get_serial_sequence('admissions_stanceversion', 'id'))")
            version.id = cursor.fetchone()[0]
        StanceVersion.objects.filter(pk=previous.pk).update(superseded_by_id=version.id)
    version.save(force_insert=True)
    StanceSource.objects.bulk_create([StanceSource(version=version, claim_id=claim_id) for claim_id in sources])
    return version


# What a revision keeps of the version it replaces: only the text is the steward's.
CARRIED_BY_REVISION = ("entity", "transparency", "as_of", "evidence_refs")


def _source_ids(version: StanceVersion) -> list:
    """The claims a version rests on, in the order they were promoted."""
    return list(version.source_links.order_by("id").values_list("claim_id", flat=True))


def _stance_head(stance: Stance) -> StanceVersion | None:
    # Two stewards promoting into (or revising) the same stance at once would
    # both read the same head and both write its successor; the lock on the
    # stance row makes the second read the first one's version.
    Stance.objects.select_for_update().filter(pk=stance.pk).first()
    return StanceVersion.objects.filter(stance_id=stance.pk, superseded_by__isnull=True).first()


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


def _version_from_promotion(
    *, stance: Stance, claim: SystemClaim, steward: User, reason: str, now: datetime
) -> StanceVersion:
    """The stance's next version after a claim is promoted to it.

    A stance with no live version takes the claim's text, entity, transparency,
    as-of date and evidence. A live stance keeps its text, entity and
    transparency; it gains the claim's evidence and, if newer, its as-of date.
    Either way the claim joins its sources.
    """
    # A system claim has both (the memories_system_shape constraint).
    assert claim.as_of is not None and claim.evidence_refs is not None
    head = _stance_head(stance)
    if head is None or not head.is_live:
        fields = dict(
            text=claim.body,
            entity=claim.entity,
            transparency=claim.transparency,
            as_of=claim.as_of,
            evidence_refs=list(claim.evidence_refs),
        )
        sources = [claim.pk]
    else:
        fields = dict(
            text=head.text,
            entity=head.entity,
            transparency=head.transparency,
            as_of=max(head.as_of, claim.as_of),
            evidence_refs=_merged_evidence(head.evidence_refs, claim.evidence_refs),
        )
        sources = [*_source_ids(head), claim.pk]
    return _write_version(
        previous=head, sources=sources, stance=stance, made_by=steward, made_at=now, reason=reason, **fields
    )


def stance_revise(
    *, stance: Stance, steward: User, text: str, reason: str, now: datetime | None = None
) -> StanceVersion:
    """A new version of a live stance with new text; its evidence, date and sources carry over.

    The text is the only thing a steward writes: what the stance rests on
    comes from the claims promoted to it.
    """
    if not is_steward(steward):
        raise PermissionDenied("Only a steward revises stances.")
    reason = _clean_reason(reason)
    text = (text or "").strip()
    with transaction.atomic():
        head = _stance_head(stance)
        if head is None or not head.is_live:
            raise ValidationError({"stance": ["Only a live stance can be revised; promote a claim to it again."]})
        if text == head.text:
            raise ValidationError({"text": ["The text is unchanged; a revision says something new."]})
        carried = {field: getattr(head, field) for field in CARRIED_BY_REVISION}
        return _write_version(
            previous=head,
            sources=_source_ids(head),
            stance=stance,
            text=text,
            **carried,
            made_by=steward,
            made_at=now or timezone.now(),
            reason=reason,
        )


def stance_retire_blocker(*, version: StanceVersion | None, user: User) -> str | None:
    """Why this steward may not retire the stance whose head is `version`, or None."""
    if version is None or not version.is_live:
        return "This stance is not live, so there is nothing to retire."
    if version.made_by_id == user.pk:
        return "You made this version of the stance; another steward must retire it."
    return None


def stance_retire(*, stance: Stance, steward: User, reason: str, now: datetime | None = None) -> StanceVersion:
    """Take a live stance out of the system plane. Four eyes: not by the steward who made its live version."""
    if not is_steward(steward):
        raise PermissionDenied("Only a steward retires stances.")
    reason = _clean_reason(reason)
    with transaction.atomic():
        head = _stance_head(stance)
        blocker = stance_retire_blocker(version=head, user=steward)
        if blocker is not None:
            raise ValidationError({"stance": [blocker]})
        assert head is not None  # the blocker refuses a stance with no head
        head.retired_at = now or timezone.now()
        head.retired_by = steward
        head.retire_reason = reason
        head.save(update_fields=["retired_at", "retired_by", "retire_reason"])
        return head
