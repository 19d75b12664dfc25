"""Stewards' decisions on system claims, and the reviewed stances claims are promoted to.

A system claim is a `memories.Memory` in the `system` bucket. Nothing about the
row itself makes it true: its status is derived from the append-only
`AdmissionRecord` rows stewards write (see `admissions.status`). The
database refuses to change or delete a record and refuses records that break
the four-eyes rule, so no code path can rewrite the history a status comes from.
"""

from __future__ import annotations

import re
from typing import ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual
from django.utils import timezone

from memories.models import BODY_MAX_CHARS, STANCE_PATTERN, Bucket, Memory, Transparency, evidence_problems

REASON_MAX_CHARS = 2_000
STANCE_ID_MAX_CHARS = 200
STANCE_TITLE_MAX_CHARS = 200
STANCE_BODY_MAX_CHARS = 10_000


def _text_problem(value: str | None, *, name: str, limit: int, missing: str) -> str:
    """What is wrong with a required text, or "": it is blank, or longer than its limit."""
    if not (value or "").strip():
        return missing
    if len(value or "") > limit:
        return f"The {name} is {len(value or '')} characters; the limit is {limit}."
    return ""


class Decision(models.TextChoices):
    """What a steward records about a system claim. The claim's status is derived from these records."""

    ADMIT = "admit"
    REJECT = "reject"
    CHALLENGE = "challenge"
    REVOKE = "revoke"
    PROMOTE = "promote", "Promote to stance"


class Status(models.TextChoices):
    """A claim's derived status. Never stored: it is computed from the records."""

    CANDIDATE = "candidate"
    CHALLENGED = "challenged"
    ADMITTED = "admitted"
    TOMBSTONE = "tombstone", "Promotion tombstone"
    REJECTED = "rejected"


# The decisions that move a claim's status. A promotion is recorded beside them
# but leaves the claim admitted; its effect is the supersede pointer.
STATUS_DECISIONS = {
    Decision.ADMIT: Status.ADMITTED,
    Decision.REJECT: Status.REJECTED,
    Decision.CHALLENGE: Status.CHALLENGED,
    Decision.REVOKE: Status.CHALLENGED,
}


# Queue order: what needs a steward first. The view says the same in SQL.
STATUS_RANK = {
    Status.CANDIDATE: 0,
    Status.CHALLENGED: 1,
    Status.ADMITTED: 2,
    Status.REJECTED: 3,
    Status.TOMBSTONE: 4,
}


class SystemClaimManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(bucket=Bucket.SYSTEM)


class SystemClaim(Memory):
    """The system bucket as stewards see it: a proxy, so the admin and its permissions are the stewards' own."""

    objects: ClassVar[SystemClaimManager] = SystemClaimManager()

    class Meta:
        proxy = True
        verbose_name = "system claim"
        verbose_name_plural = "system claims"
        permissions = [
            ("decide_claim", "Can admit, reject, challenge, revoke and promote system claims"),
            ("submit_claim", "Can submit system claims through the API"),
        ]


class Stance(models.Model):
    """A reviewed knowledge-base position that admitted claims are promoted into."""

    id = models.CharField(
        primary_key=True,
        max_length=STANCE_ID_MAX_CHARS,
        help_text="Lowercase words joined by hyphens, such as earning-bitcoin.",
    )
    title = models.CharField(max_length=STANCE_TITLE_MAX_CHARS)
    body = models.TextField()
    reviewed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reviewed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        permissions = [("manage_stance", "Can revise and retire reviewed stances")]
        constraints = [
            models.CheckConstraint(
                condition=Q(id__regex=STANCE_PATTERN)
                & ~Q(title__regex=r"^\s*$")
                & ~Q(body__regex=r"^\s*$")
                & Q(LessThanOrEqual(Length("body"), STANCE_BODY_MAX_CHARS)),
                name="admissions_stance_shape",
            )
        ]

    def __str__(self) -> str:
        return f"{self.id}: {self.title}"

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        if not re.fullmatch(STANCE_PATTERN, self.id or ""):
            errors["id"] = ["A stance id is lowercase letters and digits in words joined by single hyphens."]
        elif len(self.id) > STANCE_ID_MAX_CHARS:
            errors["id"] = [f"A stance id is at most {STANCE_ID_MAX_CHARS} characters."]
        if not (self.title or "").strip():
            errors["title"] = ["A stance needs a title."]
        if problem := _text_problem(
            self.body, name="body", limit=STANCE_BODY_MAX_CHARS, missing="A stance needs a body."
        ):
            errors["body"] = [problem]
        if errors:
            raise ValidationError(errors)


# A version is live while no newer version replaced it and no steward retired it.
# The one spelling of "live": selectors, the admin and the recall plane all use it.
LIVE_VERSION = Q(superseded_by__isnull=True, retired_at__isnull=True)


class StanceVersionQuerySet(models.QuerySet):
    def live(self) -> StanceVersionQuerySet:
        """The one version of each stance the system plane may render: current and not retired."""
        return self.filter(LIVE_VERSION)


class StanceVersion(models.Model):
    """One version of a stance: what the system plane renders in place of the claims promoted to it.

    Its content (text, entity, transparency, `as_of`, evidence) is taken from
    those claims when a steward promotes one, and is never edited: a revision
    or a further promotion writes a new version, and the old one points at it
    (`superseded_by`). A trigger refuses any other change, so the content a
    render showed can always be read back. Retiring is the one other change,
    recorded on the version with the steward and the reason.
    """

    id = models.BigAutoField(primary_key=True)
    stance = models.ForeignKey(Stance, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField(help_text="1 for the first version of the stance, then 2, 3, ...")
    text = models.TextField(help_text="What an agent is shown, clamped like any fact.")
    entity = models.CharField(max_length=200, null=True, blank=True)
    transparency = models.CharField(max_length=16, choices=Transparency.choices)
    as_of = models.DateField()
    evidence_refs = models.JSONField()
    sources = models.ManyToManyField(Memory, through="StanceSource", related_name="stance_versions")
    made_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    made_at = models.DateTimeField(default=timezone.now)
    reason = models.TextField()
    superseded_by = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="supersedes"
    )
    retired_at = models.DateTimeField(null=True, blank=True)
    retired_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    retire_reason = models.TextField(blank=True, default="")

    objects = StanceVersionQuerySet.as_manager()

    class Meta:
        ordering = ["stance", "number"]
        constraints = [
            models.UniqueConstraint(fields=["stance", "number"], name="admissions_stance_version_number"),
            # At most one current version per stance: the head of its chain.
            models.UniqueConstraint(
                fields=["stance"], condition=Q(superseded_by__isnull=True), name="admissions_stance_one_current"
            ),
            models.CheckConstraint(
                condition=~Q(text__regex=r"^\s*$")
                & Q(LessThanOrEqual(Length("text"), BODY_MAX_CHARS))
                & Q(transparency__in=Transparency.values)
                & Q(number__gte=1)
                & ~Q(reason__regex=r"^\s*$")
                & Q(LessThanOrEqual(Length("reason"), REASON_MAX_CHARS)),
                name="admissions_stance_version_shape",
            ),
            models.CheckConstraint(
                condition=(Q(retired_at__isnull=True) & Q(retired_by__isnull=True) & Q(retire_reason=""))
                | (Q(retired_at__isnull=False) & Q(retired_by__isnull=False) & ~Q(retire_reason__regex=r"^\s*$")),
                name="admissions_stance_retired_together",
            ),
            models.CheckConstraint(
                condition=Q(superseded_by__isnull=True) | ~Q(superseded_by=models.F("id")),
                name="admissions_stance_version_not_itself",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.stance_id} v{self.number}"

    @property
    def is_live(self) -> bool:
        return self.superseded_by_id is None and self.retired_at is None

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        if problem := _text_problem(
            self.text, name="text", limit=BODY_MAX_CHARS, missing="A stance version needs text."
        ):
            errors["text"] = [problem]
        if self.transparency not in Transparency.values:
            errors["transparency"] = [f"Transparency is one of {', '.join(Transparency.values)}."]
        problems = evidence_problems(self.evidence_refs)
        if problems:
            errors["evidence_refs"] = problems
        missing_reason = "A stance version needs a reason for its receipt."
        if problem := _text_problem(self.reason, name="reason", limit=REASON_MAX_CHARS, missing=missing_reason):
            errors["reason"] = [problem]
        if errors:
            raise ValidationError(errors)


class StanceSource(models.Model):
    """A claim a stance version was taken from: the promoted claims, carried forward to each new version."""

    id = models.BigAutoField(primary_key=True)
    version = models.ForeignKey(StanceVersion, on_delete=models.CASCADE, related_name="source_links")
    claim = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["version", "id"]
        constraints = [models.UniqueConstraint(fields=["version", "claim"], name="admissions_stance_source_once")]

    def __str__(self) -> str:
        return f"{self.version} from {self.claim_id}"


class AdmissionRecord(models.Model):
    """An append-only receipt of one steward's decision on one claim.

    The organisation is the claim's, carried directly so the row is tenant-tagged
    like every other; the steward may belong to any organisation.
    """

    id = models.BigAutoField(primary_key=True)
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.PROTECT, related_name="+")
    claim = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="admission_records")
    decision = models.CharField(max_length=16, choices=Decision.choices)
    steward = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="admission_records")
    reason = models.TextField()
    at = models.DateTimeField(default=timezone.now)
    # Set on a promotion only: the stance and the tombstone that now supersedes the claim.
    stance = models.ForeignKey(Stance, null=True, blank=True, on_delete=models.PROTECT, related_name="promotions")
    tombstone = models.ForeignKey(Memory, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["claim", "-at", "-id"], name="admissions_claim_latest_idx")]
        constraints = [
            models.CheckConstraint(condition=Q(decision__in=Decision.values), name="admissions_decision_valid"),
            models.CheckConstraint(
                condition=~Q(reason__regex=r"^\s*$") & Q(LessThanOrEqual(Length("reason"), REASON_MAX_CHARS)),
                name="admissions_reason_required",
            ),
            models.CheckConstraint(
                condition=(Q(decision=Decision.PROMOTE) & Q(stance__isnull=False) & Q(tombstone__isnull=False))
                | (~Q(decision=Decision.PROMOTE) & Q(stance__isnull=True) & Q(tombstone__isnull=True)),
                name="admissions_promotion_shape",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision} {self.claim_id} by {self.steward_id}"


class ClaimStatus(models.Model):
    """One row per system memory from the view `admissions_claim_status`: its derived status.

    Read-only; join it with `admissions.status.with_status`.
    """

    claim = models.OneToOneField(
        Memory,
        primary_key=True,
        db_column="claim_id",
        on_delete=models.DO_NOTHING,
        related_name="admission_status",
    )
    status = models.CharField(max_length=16, choices=Status.choices)
    rank = models.IntegerField()
    decided_at = models.DateTimeField(null=True)
    record = models.ForeignKey(AdmissionRecord, null=True, on_delete=models.DO_NOTHING, related_name="+")

    class Meta:
        managed = False
        db_table = "admissions_claim_status"
        verbose_name_plural = "claim statuses"

    def __str__(self) -> str:
        return f"{self.claim_id}: {self.status}"
