"""Threads an agent took part in, their events, and what consolidation learned from them.

Every table carries the organisation directly and every unique constraint
includes it, so a thread id chosen by one tenant never meets another's. An
event's tenant must be its thread's tenant: a composite foreign key
(`threads_event_same_org`, in the first migration) holds that in PostgreSQL.
"""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.lookups import Exact

from memories.models import BodyHasControlChars

THREAD_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$"


class Thread(models.Model):
    """A conversation, named by the caller's own id, consolidated up to a watermark."""

    id = models.BigAutoField(primary_key=True)
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.CASCADE, related_name="threads")
    external_id = models.CharField(max_length=200)
    last_sequence = models.PositiveBigIntegerField(default=0, help_text="The sequence of the newest event.")
    consolidated_through = models.PositiveBigIntegerField(
        default=0, help_text="Watermark: events up to this sequence have been consolidated."
    )
    consolidated_at = models.DateTimeField(null=True, blank=True)
    consolidation_error = models.TextField(blank=True, default="")
    episodes = models.BooleanField(
        default=True, help_text="Keep this thread's events as episodes (off: facts only); see THREAD_EPISODES too."
    )
    episodes_expired = models.PositiveIntegerField(
        default=0, help_text="Episodes of this thread's places expired early by the per-place bound."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "external_id"], name="threads_thread_unique_per_org"),
            # The target of the events' composite foreign key.
            models.UniqueConstraint(fields=["organisation", "id"], name="threads_thread_org_id"),
            models.CheckConstraint(
                condition=Q(consolidated_through__lte=F("last_sequence")), name="threads_watermark_not_ahead"
            ),
        ]
        indexes = [
            # The consolidation sweep's question: which threads have events past their watermark?
            models.Index(
                fields=["updated_at"],
                name="threads_behind_idx",
                condition=Q(consolidated_through__lt=F("last_sequence")),
            )
        ]

    def __str__(self) -> str:
        return self.external_id


class ThreadEvent(models.Model):
    """One message or action in a thread: who said it, in which role, where and when."""

    class Role(models.TextChoices):
        USER = "user", "A person"
        ASSISTANT = "assistant", "The agent"
        SYSTEM = "system"
        TOOL = "tool", "A tool"

    id = models.BigAutoField(primary_key=True)
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.CASCADE, related_name="+")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="events")
    sequence = models.PositiveBigIntegerField()
    external_id = models.CharField(max_length=200, blank=True, default="", help_text="The caller's id for it.")
    role = models.CharField(max_length=16, choices=Role.choices)
    author = models.CharField(max_length=200, blank=True, default="", help_text="The author as the caller named them.")
    author_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    agent = models.ForeignKey(
        "accounts.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="Ingested by."
    )
    text = models.TextField()
    occurred_at = models.DateTimeField()
    place_channel = models.CharField(max_length=200)
    place_kind = models.CharField(max_length=16)
    place_people = models.JSONField(default=list, blank=True, help_text="Account ids of the people there.")
    erased_at = models.DateTimeField(null=True, blank=True)
    erasure_reason = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["thread", "sequence"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "thread", "sequence"], name="threads_event_sequence_unique"
            ),
            models.UniqueConstraint(
                fields=["organisation", "thread", "external_id"],
                condition=~Q(external_id=""),
                name="threads_event_external_id_unique",
            ),
            models.CheckConstraint(
                condition=Q(role__in=["user", "assistant", "system", "tool"]), name="threads_event_role_valid"
            ),
            models.CheckConstraint(
                condition=Q(place_kind__in=["dm", "private", "public"]), name="threads_event_place_kind_valid"
            ),
            # Erased events keep their receipt and lose their words; live ones have words.
            models.CheckConstraint(
                condition=(Q(erased_at__isnull=True) & ~Q(text=""))
                | (Q(erased_at__isnull=False) & Q(text="") & ~Q(erasure_reason="")),
                name="threads_event_erasure_empties",
            ),
            models.CheckConstraint(
                # Q & an expression is a Q at runtime; the stubs type it as Combinable.
                condition=cast(Q, Q(sequence__gte=1) & Exact(BodyHasControlChars(F("text")), False)),
                name="threads_event_shape",
            ),
        ]
        indexes = [
            models.Index(fields=["organisation", "author_user"], name="threads_event_author_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}#{self.sequence}"


class Learning(models.Model):
    """Why a learned memory exists: the thread events that taught it, and the key it is about.

    The key (for example `called`, `my:timezone`, `prefers:tea`) is what a
    later candidate must share to contradict it; the sources are what an
    erasure follows to the memories derived from erased words.
    """

    id = models.BigAutoField(primary_key=True)
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.CASCADE, related_name="+")
    memory = models.OneToOneField("memories.Memory", on_delete=models.PROTECT, related_name="learning")
    thread = models.ForeignKey(
        Thread,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="learnings",
        help_text="Empty for a person's own fact: its learning only keeps its key (threads.conflicts).",
    )
    key = models.CharField(max_length=200)
    extractor = models.CharField(max_length=16)
    events = models.ManyToManyField(ThreadEvent, through="LearningSource", related_name="learnings")
    created_at = models.DateTimeField(auto_now_add=True)

    class Conflict(models.TextChoices):
        NONE = "", "No conflict"
        PENDING = "pending", "Pending: the person's own fact says otherwise"
        ACCEPTED = "accepted", "Accepted: it replaced the person's fact"
        DISMISSED = "dismissed", "Dismissed: forgotten"

    # A learned fact contradicting a person's own fact (bucket `user`, same subject and key)
    # never replaces it: it is written already superseded by that fact (so it is neither
    # recalled, rendered nor counted), and waits here for the person to accept or dismiss it.
    conflict = models.CharField(max_length=16, choices=Conflict.choices, blank=True, default="")
    conflicts_with = models.ForeignKey(
        "memories.Memory", null=True, blank=True, on_delete=models.PROTECT, related_name="conflicting_learnings"
    )
    conflict_decided_at = models.DateTimeField(null=True, blank=True)
    conflict_decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "memory"], name="threads_learning_unique"),
            models.CheckConstraint(
                condition=(Q(conflict="") & Q(conflicts_with__isnull=True))
                | (Q(conflict__in=["pending", "accepted", "dismissed"]) & Q(conflicts_with__isnull=False)),
                name="threads_learning_conflict_shape",
            ),
        ]
        indexes = [
            models.Index(fields=["organisation", "key"], name="threads_learning_key_idx"),
            models.Index(
                fields=["organisation", "conflicts_with"],
                name="threads_learning_pending_idx",
                condition=Q(conflict="pending"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} → {self.memory_id}"


class LearningSource(models.Model):
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.CASCADE, related_name="+")
    learning = models.ForeignKey(Learning, on_delete=models.CASCADE, related_name="sources")
    event = models.ForeignKey(ThreadEvent, on_delete=models.PROTECT, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "learning", "event"], name="threads_learning_source_unique")
        ]

    def __str__(self) -> str:
        return f"{self.learning_id} ← {self.event_id}"


class EpisodePart(models.Model):
    """Where an episode sits in the message it was cut from, and the message it answers or was answered by.

    A message is one event, or consecutive events posted as its parts (`msg-1.1`, `msg-1.2`); `message` is the
    sequence of its first event and parts are numbered on across its events. `context` is the linked message's
    episode: for an assistant's part, the last part of the user message before it (the question it answers);
    for a user's part, the first part of the answer that names it (filled in when the answer is consolidated).
    The context is a link, never text: it is not rendered, not returned as the episode's words, and erasure
    clears it with the linked events.
    """

    id = models.BigAutoField(primary_key=True)
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.CASCADE, related_name="+")
    memory = models.OneToOneField("memories.Memory", on_delete=models.CASCADE, related_name="episode_part")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="+")
    message = models.PositiveBigIntegerField(help_text="The sequence of the message's first event.")
    part = models.PositiveIntegerField(help_text="This episode's number within its message, from 1.")
    parts = models.PositiveIntegerField(help_text="How many episodes the message became.")
    context = models.ForeignKey(
        "memories.Memory",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The linked message's episode: the question an answer's part answers, or a question's answer.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "thread", "message", "part"], name="threads_episode_part_unique"
            ),
            models.CheckConstraint(
                condition=Q(part__gte=1) & Q(part__lte=F("parts")), name="threads_episode_part_within_parts"
            ),
            models.CheckConstraint(condition=~Q(context=F("memory")), name="threads_episode_part_context_is_another"),
        ]
        indexes = [
            # The walk's steps to the message before (its last part) and after (its first part).
            models.Index(
                fields=["organisation", "thread", "message"], name="threads_part_last_idx", condition=Q(part=F("parts"))
            ),
            models.Index(
                fields=["organisation", "thread", "message"], name="threads_part_first_idx", condition=Q(part=1)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}#{self.message} part {self.part}/{self.parts}"
