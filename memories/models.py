"""The memory store and the rules the database holds for it.

Every rule here exists twice: as a named constraint or trigger in PostgreSQL,
so no code path can break it, and as a validation in `Memory.clean()`, so a
caller is told which field broke which rule.
"""

from __future__ import annotations

import re
import uuid
from typing import cast

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Func, Q
from django.db.models.functions import Cast, Length
from django.db.models.lookups import Exact, LessThanOrEqual
from pgvector.django import HalfVectorField

from accounts.models import AuditRow
from lib.text import CONTROL_CHARS, CONTROL_CHARS_SQL, control_problem
from lib.times import datetime_range_problem
from memories.db.predicates import BOUNDED_TIMES, live_q, times_in_range_q

BODY_MAX_CHARS = 2_000
SOURCE_REF_MAX_CHARS = 200
SLUG_MAX_CHARS = 200
SLUG_PREFIX = "sys:"
STANCE_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
EVIDENCE_KINDS = ("url", "document", "message", "run", "dataset", "commit")
# Control characters other than tab and newline, C1 included (lib.text).
# NUL cannot be stored in a PostgreSQL text column at all; the others would let
# a body break the lines of a rendered memory block, or act on a terminal.


class Bucket(models.TextChoices):
    """Where a memory came from. `user`: a person said "remember this"; `learned`: an agent or
    consolidation produced it, naming its source; `system`: a network-wide claim that stewards review."""

    USER = "user", "Saved by a person"
    LEARNED = "learned", "Learned from threads"
    SYSTEM = "system", "Network claim"


class SubjectType(models.TextChoices):
    """Whom a memory is about, so that it can be listed, exported and erased."""

    WORKSPACE = "workspace", "The workspace"
    CANDIDATE = "candidate", "A candidate"
    USER = "user", "An account holder"


class Scope(models.TextChoices):
    """Who may recall a memory: anyone in the workspace, those in its channel, or only a one-to-one
    conversation with the person it is about."""

    WORKSPACE = "workspace"
    CHANNEL = "channel"
    PERSON = "person"


class Author(models.TextChoices):
    """Who wrote a memory's text."""

    MODEL = "model", "Inferred by an agent"
    PERSON = "person", "Noted by a person"


class SourceKind(models.TextChoices):
    """What a memory was taken from. `source_ref` names the thing itself: a message id, a run,
    a thread event; `import` is a row brought in by `manage.py import_memories`."""

    MESSAGE = "message"
    SESSION = "session"
    RUN = "run"
    THREAD_EVENT = "thread_event", "Thread event"
    PERSON = "person"
    # A thread event kept as a transcript line by consolidation. Only consolidation
    # writes it (memories/api/serializers/ refuses it from callers); `source_event` names the event.
    EPISODE = "episode"
    IMPORT = "import"


class Tier(models.TextChoices):
    """How a memory renders: `profile` facts in a section of their own, `log` and `note` lines among the
    recent ones, notes only for MEMORY_NOTE_FADE_DAYS. Every tier keeps the ordinary expiry
    (MEMORY_DEFAULT_TTL_DAYS): none lasts forever."""

    PROFILE = "profile"
    LOG = "log"
    NOTE = "note"


class Transparency(models.TextChoices):
    """A system claim's transparency tier, shown on every line it renders."""

    LEDGER = "ledger"
    GLASS = "glass"


class ClaimedAdmission(models.TextChoices):
    """What a system claim's author says of its admission. It never counts: a claim's status is derived
    from stewards' records (`admissions`)."""

    CANDIDATE = "candidate"
    ADMITTED = "admitted"
    REJECTED = "rejected"


# The provenance text an erasure empties, since a label ("DM with mona") or a message id can name or quote
# whom the row was about; the trigger memories_immutable lets only an erased row lose it. The kind stays.
ERASED_PROVENANCE = ("source_ref", "source_label", "source_run_id")

SYSTEM_FIELDS = ("slug", "entity", "transparency", "as_of", "admission", "evidence_refs", "stance")


class JsonbTypeof(Func):
    function = "jsonb_typeof"
    output_field = models.CharField()


class EvidenceRefsValid(Func):
    """SQL function `memories_evidence_refs_valid(jsonb)`, created in the first migration."""

    function = "memories_evidence_refs_valid"
    output_field = models.BooleanField()


class BodyHasControlChars(Func):
    template = "%(expressions)s ~ '" + CONTROL_CHARS_SQL + "'"
    output_field = models.BooleanField()


class Memory(models.Model):
    """One remembered fact, or one network claim (bucket `system`)."""

    # Set on the row `memory_forget` returns: how many versions the chain had, and how many went now.
    chain_versions: int
    forgotten_versions: int

    # Identity and ownership
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.PROTECT, related_name="memories")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="owned_memories",
        help_text="Whose saved memory this is, when a person saved it.",
    )
    agent = models.ForeignKey(
        "accounts.Agent",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="memories",
        help_text="The agent holding it; empty means shared by the organisation's agents.",
    )
    bucket = models.CharField(max_length=16, choices=Bucket.choices)
    body = models.TextField()

    # Subject: who the memory is about.
    subject_type = models.CharField(max_length=16, choices=SubjectType.choices, default=SubjectType.WORKSPACE)
    subject_id = models.CharField(max_length=200, blank=True, default="")

    # Scope: who it may be recalled for.
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.WORKSPACE)
    scope_ref = models.CharField(max_length=200, blank=True, default="")
    scope_label = models.CharField(max_length=200, blank=True, default="")

    # Provenance
    author = models.CharField(max_length=16, choices=Author.choices)
    written_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="written_memories"
    )
    source_kind = models.CharField(max_length=16, choices=SourceKind.choices)
    source_ref = models.CharField(max_length=SOURCE_REF_MAX_CHARS, blank=True, default="")
    source_label = models.CharField(max_length=200, blank=True, default="")
    source_run_id = models.CharField(max_length=200, blank=True, default="")
    # The thread event an episode keeps (several when a long event was split). A foreign key into threads,
    # against the apps' import order: an episode is a memory row (docs/architecture.md, "Schema arrows").
    # PROTECT: erasure never deletes an event, it empties it and keeps its receipt, and an
    # erased episode's receipt must keep pointing at that receipt.
    source_event = models.ForeignKey(
        "threads.ThreadEvent", null=True, blank=True, on_delete=models.PROTECT, related_name="episodes"
    )

    tier = models.CharField(max_length=16, choices=Tier.choices, default=Tier.LOG)
    pinned = models.BooleanField(default=False)

    # Time: when it was true, and when it stops being kept.
    occurred_at = models.DateTimeField(null=True, blank=True, help_text="When the event happened, if known.")
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(null=True, blank=True, help_text="Set when a correction replaced it.")
    expires_at = models.DateTimeField(null=True, blank=True)

    # Embedding
    # Half precision: half the table and index size, the same top 10 (docs/benchmarks.md, "halfvec").
    embedding = HalfVectorField(dimensions=384, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    embedding_attempts = models.PositiveSmallIntegerField(default=0)
    embedding_error = models.TextField(blank=True, default="")

    search_vector = models.GeneratedField(
        expression=SearchVector("body", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    # The system bucket's fields: required together there, refused elsewhere.
    slug = models.CharField(max_length=SLUG_MAX_CHARS, null=True, blank=True)
    entity = models.CharField(max_length=200, null=True, blank=True)
    transparency = models.CharField(max_length=16, choices=Transparency.choices, null=True, blank=True)
    as_of = models.DateField(null=True, blank=True)
    admission = models.CharField(
        max_length=16,
        choices=ClaimedAdmission.choices,
        null=True,
        blank=True,
        help_text="What the author claimed. Never counts: status is derived from steward records.",
    )
    evidence_refs = models.JSONField(null=True, blank=True)
    stance = models.CharField(max_length=200, null=True, blank=True)
    promoted = models.GeneratedField(
        expression=Q(stance__isnull=False),  # type: ignore[arg-type]  # Django takes a Q; the stubs want an Expression
        output_field=models.BooleanField(),
        db_persist=True,
    )

    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="supersedes"
    )

    # Erasure receipt: the row stays, its content goes.
    redacted_at = models.DateTimeField(null=True, blank=True)
    redacted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    redacted_by_label = models.CharField(max_length=200, blank=True, default="")
    redaction_reason = models.CharField(max_length=500, blank=True, default="")

    # A row written before a rule held that breaks it: kept (listed to owners, exported, erasable) but never
    # recalled or rendered. Set only by a data migration, which says why.
    quarantined_at = models.DateTimeField(null=True, blank=True, editable=False)
    quarantine_reason = models.CharField(max_length=500, blank=True, default="", db_default="", editable=False)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at"]
        verbose_name = "memory"
        verbose_name_plural = "memories"
        indexes = [
            # The tenant first (btree_gin): a question's words are looked up among the organisation's rows
            # only. Over every tenant's, a common word's matches were intersected with a bitmap of the tenant's
            # rows, which costs a large organisation 20 ms a recall (bench/recall.py at 1,000,000 rows).
            GinIndex(fields=["organisation", "search_vector"], name="memories_search_tenant_gin"),
            # Serves recall's predicate: tenant, then scope, over live rows only.
            models.Index(
                fields=["organisation", "scope", "scope_ref"],
                name="memories_live_scope_idx",
                condition=live_q(),
            ),
            models.Index(fields=["organisation", "bucket", "created_at"], name="memories_org_bucket_idx"),
            models.Index(fields=["organisation", "subject_type", "subject_id"], name="memories_subject_idx"),
            models.Index(fields=["expires_at"], name="memories_expiry_idx", condition=Q(redacted_at__isnull=True)),
            models.Index(fields=["superseded_by"], name="memories_superseded_by_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(bucket__in=Bucket.values), name="memories_bucket_valid"),
            models.CheckConstraint(
                condition=Q(author__in=Author.values) & Q(source_kind__in=SourceKind.values) & Q(tier__in=Tier.values),
                name="memories_enums_valid",
            ),
            models.CheckConstraint(
                condition=(
                    # Each column is tested for NULL explicitly: a CHECK passes
                    # when its condition is NULL, so "slug LIKE 'sys:%'" alone
                    # would let a NULL slug through.
                    Q(bucket="system")
                    & Q(slug__isnull=False, transparency__isnull=False, admission__isnull=False)
                    & Q(as_of__isnull=False, evidence_refs__isnull=False)
                    & Q(slug__startswith=SLUG_PREFIX)
                    & Q(transparency__in=Transparency.values)
                    & Q(admission__in=ClaimedAdmission.values)
                    & Exact(JsonbTypeof(F("evidence_refs")), "array")
                    & ~Q(evidence_refs=[])
                    & Exact(EvidenceRefsValid(F("evidence_refs")), True)
                )
                | (
                    ~Q(bucket="system")
                    & Q(slug__isnull=True)
                    & Q(entity__isnull=True)
                    & Q(transparency__isnull=True)
                    & Q(as_of__isnull=True)
                    & Q(admission__isnull=True)
                    & Q(evidence_refs__isnull=True)
                    & Q(stance__isnull=True)
                ),
                name="memories_system_shape",
            ),
            models.CheckConstraint(
                condition=(
                    (~Q(body="") | Q(redacted_at__isnull=False))
                    & (Q(superseded_by__isnull=True) | ~Q(superseded_by=F("id")))
                    & (Q(stance__isnull=True) | (Q(stance__regex=STANCE_PATTERN) & Q(body__contains=F("stance"))))
                ),
                name="memories_shape",
            ),
            models.CheckConstraint(
                # Q & an expression is a Q at runtime; the stubs type it as Combinable.
                condition=cast(
                    Q,
                    Q(LessThanOrEqual(Length("body"), BODY_MAX_CHARS))
                    & ~Q(body__regex=r"^\s|\s$")
                    & Exact(BodyHasControlChars(F("body")), False),
                ),
                name="memories_body_text",
            ),
            models.CheckConstraint(
                condition=(Q(subject_type="workspace") & Q(subject_id=""))
                | (Q(subject_type__in=["candidate", "user"]) & ~Q(subject_id="")),
                name="memories_subject_named",
            ),
            models.CheckConstraint(
                condition=(Q(scope="workspace") & Q(scope_ref=""))
                | (Q(scope__in=["channel", "person"]) & ~Q(scope_ref="")),
                name="memories_scope_ref",
            ),
            models.CheckConstraint(
                condition=Q(bucket="system") | Q(expires_at__isnull=False), name="memories_expiry_required"
            ),
            models.CheckConstraint(
                condition=Q(redacted_at__isnull=True) | (Q(body="") & Q(embedding__isnull=True)),
                name="memories_redaction_empties",
            ),
            models.CheckConstraint(condition=times_in_range_q(), name="memories_times_in_range"),
            models.CheckConstraint(
                # A person's own fact is about them; a quarantined row of before this rule is kept as it was.
                condition=~Q(bucket="user")
                | ~Q(subject_type="user")
                | (Q(owner__isnull=False) & Q(subject_id=Cast("owner", output_field=models.CharField())))
                | Q(quarantined_at__isnull=False),
                name="memories_own_fact_about_its_writer",
            ),
            models.CheckConstraint(
                # What consolidation learns from thread events is never kept in the workspace scope.
                condition=~Q(scope="workspace", source_kind="thread_event") | Q(quarantined_at__isnull=False),
                name="memories_learned_never_workspace",
            ),
        ]

    def __str__(self) -> str:
        if self.redacted_at:
            return f"[erased {self.redacted_at:%Y-%m-%d}]"
        return self.body[:80]

    def clean(self) -> None:
        """The same rules as the constraints, each naming its field."""
        errors: dict[str, list[str]] = {}

        def refuse(field: str, message: str) -> None:
            errors.setdefault(field, []).append(message)

        body = self.body or ""
        if not self.redacted_at:
            if not body.strip():
                refuse("body", "A memory needs text; it is empty or only whitespace.")
            elif body != body.strip():
                refuse("body", "The body must be trimmed of leading and trailing whitespace.")
            if len(body) > BODY_MAX_CHARS:
                refuse(
                    "body",
                    f"The body is {len(body)} characters; the limit is {BODY_MAX_CHARS}. It is refused, never cut.",
                )
            problem = control_problem(body)
            if problem:
                refuse("body", "The body " + problem[0].lower() + problem[1:])
        if len(self.source_ref or "") > SOURCE_REF_MAX_CHARS:
            refuse("source_ref", f"source_ref is longer than {SOURCE_REF_MAX_CHARS} characters.")

        if self.subject_type == SubjectType.WORKSPACE and self.subject_id:
            refuse("subject_id", "A workspace memory is about no person, so it takes no subject_id.")
        if self.subject_type in (SubjectType.CANDIDATE, SubjectType.USER) and not self.subject_id:
            refuse("subject_id", f"A {self.subject_type} memory must name its subject, so it can be listed and erased.")

        if self.scope == Scope.WORKSPACE and self.scope_ref:
            refuse("scope_ref", "A workspace memory has no scope_ref.")
        if self.scope in (Scope.CHANNEL, Scope.PERSON) and not self.scope_ref:
            refuse("scope_ref", f"A {self.scope} memory must name its {self.scope} in scope_ref.")

        if self.bucket != Bucket.SYSTEM and self.expires_at is None:
            refuse("expires_at", "User and learned memories must expire.")

        if self.bucket == Bucket.SYSTEM:
            self._clean_system(refuse)
        else:
            for field in SYSTEM_FIELDS:
                if getattr(self, field) is not None:
                    refuse(field, "This field belongs only to a system memory.")

        if self.superseded_by_id is not None and self.superseded_by_id == self.id:
            refuse("superseded_by", "A memory cannot supersede itself.")
        self._clean_provenance(refuse)
        if errors:
            raise ValidationError(errors)

    def _clean_provenance(self, refuse) -> None:
        """Times within range, a person's own fact about them, nothing learned from threads for everyone."""
        for name in BOUNDED_TIMES:
            value = getattr(self, name)
            problem = datetime_range_problem(value) if value is not None else None
            if problem:
                refuse(name, problem)
        if self.quarantined_at is not None:
            return
        if (
            self.bucket == Bucket.USER
            and self.subject_type == SubjectType.USER
            and self.subject_id != str(self.owner_id)
        ):
            refuse(
                "subject_id",
                "A fact a person saves about a person is about themself; a fact about someone else is written by "
                "an agent, or kept as a note about a candidate.",
            )
        if self.scope == Scope.WORKSPACE and self.source_kind == SourceKind.THREAD_EVENT:
            refuse("scope", "A fact learned from thread events is kept in the place it was said, never the workspace.")

    def _clean_system(self, refuse) -> None:
        if not self.slug:
            refuse("slug", f"A system claim needs a slug starting with {SLUG_PREFIX!r}.")
        elif not self.slug.startswith(SLUG_PREFIX):
            refuse("slug", f"The slug must start with {SLUG_PREFIX!r}.")
        elif len(self.slug) > SLUG_MAX_CHARS:
            refuse("slug", f"The slug is longer than {SLUG_MAX_CHARS} characters.")
        if self.transparency not in Transparency.values:
            refuse("transparency", f"Transparency must be one of {', '.join(Transparency.values)}.")
        if self.as_of is None:
            refuse("as_of", "A system claim needs the date it is true as of.")
        if self.admission not in ClaimedAdmission.values:
            refuse("admission", f"Admission must be one of {', '.join(ClaimedAdmission.values)}.")
        for message in evidence_problems(self.evidence_refs):
            refuse("evidence_refs", message)
        if self.stance is not None:
            if not re.fullmatch(STANCE_PATTERN, self.stance):
                refuse("stance", "A stance id is lowercase words joined by hyphens.")
            elif self.stance not in (self.body or ""):
                refuse("body", "A promotion tombstone's body must name the stance it was promoted to.")


def evidence_problems(refs) -> list[str]:
    """Why an evidence list is unacceptable, or [] when it is fine."""
    if not isinstance(refs, list) or not refs:
        return ["A system claim needs at least one evidence ref, as a list of {kind, ref}."]
    problems = []
    for index, item in enumerate(refs):
        if not isinstance(item, dict) or set(item) != {"kind", "ref"}:
            problems.append(f"Item {index} must be an object with exactly 'kind' and 'ref'.")
        elif item["kind"] not in EVIDENCE_KINDS:
            problems.append(f"Item {index} has kind {item['kind']!r}; known kinds are {', '.join(EVIDENCE_KINDS)}.")
        elif not isinstance(item["ref"], str) or not item["ref"].strip() or len(item["ref"]) > 500:
            problems.append(f"Item {index} needs a non-empty ref of at most 500 characters.")
        elif CONTROL_CHARS.search(item["ref"]):
            # NUL cannot be stored in jsonb at all; the others would break a rendered line.
            problems.append(f"Item {index}'s ref: {control_problem(item['ref'])}")
    return problems


# A channel's external id: printable, no slash, no surrounding whitespace, at most 200 characters.
CHANNEL_PATTERN = r"^[^\s/\x00-\x1f\x7f-\x9f](?:[^/\x00-\x1f\x7f-\x9f]{0,198}[^\s/\x00-\x1f\x7f-\x9f])?$"


class Channel(models.Model):
    """A place: its kind and its members are a record, changed only by explicit, audited writes.

    Members decide who sees channel facts; a DM's one member is the person its
    person facts are about. Turn calls read this record and never change it.
    """

    class Kind(models.TextChoices):
        DM = "dm", "Direct message"
        PRIVATE = "private", "Private channel"
        PUBLIC = "public", "Public channel"

    id = models.BigAutoField(primary_key=True)
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.CASCADE, related_name="channels")
    external_id = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="ChannelMember", related_name="channels")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "external_id"], name="memories_channel_unique_per_org"),
            models.CheckConstraint(
                condition=Q(kind__in=["dm", "private", "public"]), name="memories_channel_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.kind})"


class ChannelMember(models.Model):
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.CASCADE, related_name="+")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "channel", "user"], name="memories_channel_member_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.channel_id}"


class PlaceAudit(AuditRow):
    """One explicit change to a place's record: who made it, the kind, and the people added and removed.

    People are named by their stable ids only, so erasing someone leaves no name here.
    """

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="audit")
    agent = models.ForeignKey("accounts.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    kind_from = models.CharField(max_length=16, blank=True, default="")
    kind_to = models.CharField(max_length=16)
    added = models.JSONField(default=list, blank=True)
    removed = models.JSONField(default=list, blank=True)

    class Meta(AuditRow.Meta):
        indexes = [models.Index(fields=["organisation", "channel", "at"], name="memories_place_audit_idx")]

    def __str__(self) -> str:
        return f"{self.channel_id}: +{len(self.added)} -{len(self.removed)}"


class MemoryAudit(AuditRow):
    """An append-only record of every change to a memory, written in the change's transaction."""

    class Action(models.TextChoices):
        REMEMBER = "remember", "Remembered"
        SUPERSEDE = "supersede", "Superseded"
        PIN = "pin", "Pinned"
        UNPIN = "unpin", "Unpinned"
        REDACT = "redact", "Erased"
        PURGE = "purge", "Purged after expiry"
        EMBED = "embed", "Embedded"

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="audit")
    action = models.CharField(max_length=16, choices=Action.choices)
    actor_label = models.CharField(max_length=200, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)

    class Meta(AuditRow.Meta):
        indexes = [models.Index(fields=["organisation", "memory", "at"], name="memories_audit_memory_idx")]

    def __str__(self) -> str:
        return f"{self.action} {self.memory_id} by {self.actor_label}"


class Injection(models.Model):
    """What one turn's render put into the prompt: enough to compose the same bytes again.

    The lines themselves are in `InjectionLine`, one row per fact, so erasing a
    memory can empty exactly its lines (a trigger does it, whatever path the
    erasure took) and a replay can say which facts it can no longer show.
    """

    id = models.BigAutoField(primary_key=True)
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.PROTECT, related_name="+")
    turn_id = models.CharField(max_length=200)
    agent = models.ForeignKey("accounts.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    place_channel = models.CharField(max_length=200)
    place_kind = models.CharField(max_length=16)
    place_people = models.JSONField(default=list, blank=True, help_text="Account ids of the people in the place.")
    question = models.TextField(blank=True, default="")
    cutoff = models.DateField(help_text="Notes fade against this day; recorded so a replay fades the same ones.")
    fact_ids = models.JSONField(default=list, blank=True, help_text="The injected memories' ids, in block order.")
    paragraphs = models.JSONField(default=list, blank=True)
    sections = models.JSONField(default=list, blank=True)
    omissions = models.JSONField(default=list, blank=True)
    faded = models.JSONField(default=list, blank=True)
    duplicates = models.JSONField(default=list, blank=True)
    text_sha256 = models.CharField(max_length=64)
    text_chars = models.PositiveIntegerField(default=0)
    render_version = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["organisation", "turn_id"], name="memories_injection_turn_unique"),
            models.CheckConstraint(condition=~Q(turn_id=""), name="memories_injection_turn_named"),
        ]

    def __str__(self) -> str:
        return f"turn {self.turn_id}"


class InjectionLine(models.Model):
    """One line of an injected block: a fact, or a line a plane added."""

    id = models.BigAutoField(primary_key=True)
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.PROTECT, related_name="+")
    injection = models.ForeignKey(Injection, on_delete=models.CASCADE, related_name="lines")
    position = models.PositiveIntegerField()
    memory = models.ForeignKey(Memory, null=True, blank=True, on_delete=models.PROTECT, related_name="injected_lines")
    block = models.CharField(max_length=120, help_text="workspace, channel, person, or section:<plane>.")
    section = models.CharField(max_length=16, blank=True, default="")
    scope = models.CharField(max_length=16, blank=True, default="")
    author = models.CharField(max_length=16, blank=True, default="")
    tier = models.CharField(max_length=16, blank=True, default="")
    line = models.TextField(blank=True, default="")
    erased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["injection", "position"]
        indexes = [models.Index(fields=["organisation", "memory"], name="memories_injline_memory_idx")]
        constraints = [
            models.UniqueConstraint(fields=["injection", "position"], name="memories_injline_position_unique"),
            models.CheckConstraint(
                condition=Q(erased_at__isnull=True) | Q(line=""), name="memories_injline_erased_is_empty"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.injection_id}:{self.position}"


class IdempotencyKey(models.Model):
    """A write made under an `Idempotency-Key`, so a retry returns the first result instead of writing twice.

    Only the row's id is kept, never its body: a retry after an erasure returns
    the receipt, not the erased text.
    """

    id = models.BigAutoField(primary_key=True)
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.CASCADE, related_name="+")
    principal = models.CharField(max_length=80)
    key = models.CharField(max_length=200)
    endpoint = models.CharField(max_length=120)
    request_sha256 = models.CharField(max_length=64)
    memory = models.ForeignKey(Memory, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_extra = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "principal", "key"], name="memories_idempotency_unique")
        ]
        indexes = [models.Index(fields=["created_at"], name="memories_idempotency_age_idx")]

    def __str__(self) -> str:
        return f"{self.principal} {self.key}"


class TenantVectorIndex(models.Model):
    """A partial HNSW index over one large organisation's workspace vectors.

    Recall uses it only when `ready`: a small organisation is searched exactly
    over the covering index instead, which is both faster and exact there (see
    docs/recall.md). Built in the background by `memories.recall.hnsw`.
    """

    class State(models.TextChoices):
        BUILDING = "building"
        READY = "ready"
        FAILED = "failed"

    organisation = models.OneToOneField(
        "accounts.Organisation", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    index_name = models.CharField(max_length=63, unique=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.BUILDING)
    rows_at_build = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    built_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "tenant vector indexes"

    def __str__(self) -> str:
        return f"{self.index_name} ({self.state})"
