"""Who is asking: people, the organisations they belong to, and the agents that act for them."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import timedelta

from django.contrib.auth.models import AbstractUser
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils import timezone


class User(AbstractUser):
    """An account holder. A custom model from the first migration, so it can grow."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)

    def membership(self) -> Membership | None:
        """The person's one membership: an account belongs to exactly one organisation."""
        return Membership.objects.select_related("organisation").filter(user=self).first()


class Organisation(models.Model):
    """The tenant. Every row of tenant data carries its organisation directly."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200, blank=True)
    # Per-organisation opt-in to admitted network claims; the global flag
    # SYSTEM_RECALL_ENABLED must also be on.
    system_recall_opt_in = models.BooleanField(default=False)
    # Its owners' switch for threads, a product setting: off keeps facts only. ARCHIVIST_THREAD_EPISODES off
    # turns episodes off everywhere whatever this says; a thread can turn them off for itself.
    thread_episodes = models.BooleanField(
        default=True, help_text="Keep thread events as episodes (off: facts only); changed by an owner."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


HANDLE_PATTERN = r"^[A-Za-z0-9._:@-]{1,150}$"
HANDLE_MAX_CHARS = 150


def handle_or_username(handle: str | None, username: str) -> str:
    """How answers and forms name a person: their handle (an integration's id for them), else their username."""
    return handle or username


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        MEMBER = "member"
        STEWARD = "steward"

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    # A directory person's id in the integration that created them (a chat platform's user id).
    # The person's one stable id stays `user_id`; the handle, like the username, is only a lookup key.
    handle = models.CharField(max_length=HANDLE_MAX_CHARS, null=True, blank=True)
    display_name = models.CharField(max_length=200, blank=True, default="")
    # Created by an integration and not yet invited to sign in.
    directory = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # One organisation per account keeps "the tenant comes from the
            # principal" unambiguous for session users.
            models.UniqueConstraint(fields=["user"], name="accounts_membership_one_org_per_user"),
            models.CheckConstraint(
                condition=Q(role__in=["owner", "member", "steward"]), name="accounts_membership_role_valid"
            ),
            models.UniqueConstraint(
                fields=["organisation", "handle"],
                condition=Q(handle__isnull=False),
                name="accounts_membership_handle_per_org",
            ),
            models.CheckConstraint(
                condition=Q(handle__isnull=True) | Q(handle__regex=HANDLE_PATTERN),
                name="accounts_membership_handle_shape",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role} of {self.organisation})"

    @property
    def label(self) -> str:
        """How responses and forms name this person (`handle_or_username`)."""
        return handle_or_username(self.handle, self.user.username)


class Agent(models.Model):
    """An AI agent acting inside one organisation."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organisation", "name"], name="accounts_agent_name_per_org")]

    def __str__(self) -> str:
        return f"{self.name} ({self.organisation})"


TOKEN_PREFIX = "arch_"
DEFAULT_TOKEN_LIFETIME = timedelta(days=365)


def hash_token(raw: str) -> str:
    """Tokens are 256 random bits, so one fast hash is enough; only the hash is stored."""
    return hashlib.sha256(raw.encode()).hexdigest()


class AgentTokenQuerySet(models.QuerySet):
    def usable(self, now=None):
        now = now or timezone.now()
        return self.filter(revoked_at__isnull=True, expires_at__gt=now)


class AgentToken(models.Model):
    """A bearer token for one agent. The raw token is shown once, at creation."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="agent_tokens")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tokens")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    # The first characters, so an operator can tell tokens apart without the secret.
    hint = models.CharField(max_length=16, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # The directory right: create people and places, and name a place for the first time in a turn.
    directory = models.BooleanField(default=True)
    # A restricted token acts only in these channels (external ids) and in DMs with these people (ids).
    restricted = models.BooleanField(default=False)
    allowed_channels = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    allowed_people = ArrayField(models.UUIDField(), default=list, blank=True)

    objects = AgentTokenQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.hint}… for {self.agent}"

    @classmethod
    def issue(cls, *, agent: Agent, lifetime: timedelta = DEFAULT_TOKEN_LIFETIME) -> tuple[AgentToken, str]:
        """Create a token and return it with its raw value, which is never stored."""
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        now = timezone.now()
        token = cls.objects.create(
            organisation=agent.organisation,
            agent=agent,
            token_hash=hash_token(raw),
            hint=raw[: len(TOKEN_PREFIX) + 6],
            created_at=now,
            expires_at=now + lifetime,
        )
        return token, raw

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])


class AuditRow(models.Model):
    """What every audit row carries: its organisation, the person who acted (if one did) and when, in order."""

    id = models.BigAutoField(primary_key=True)
    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="+")
    actor = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["at", "id"]


class AccountAudit(AuditRow):
    """One change to who may sign in, a role, a directory record or an organisation's switch.

    Who acted (a person or an agent), whom it concerned and when, by stable ids only: erasing
    someone leaves no name here, so a rename's row says that the name changed, never what to.
    """

    class Action(models.TextChoices):
        CREATE = "create", "Added to the directory"
        RENAME = "rename", "Renamed in the directory"
        INVITE = "invite", "Invited to sign in"
        REMOVE = "remove", "Removed: cannot sign in"
        RESTORE = "restore", "Restored: signs in again"
        ROLE = "role", "Role changed"
        SWITCH = "switch", "Organisation switch changed"

    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Whom the change concerned; empty for an organisation's switch.
    person = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=16, choices=Action.choices)
    # What changed, as values (roles, a switch and its setting), never a name.
    detail = models.JSONField(default=dict, blank=True)

    class Meta(AuditRow.Meta):
        indexes = [models.Index(fields=["organisation", "person", "at"], name="accounts_audit_person_idx")]
        constraints = [
            models.CheckConstraint(
                condition=Q(action__in=["create", "rename", "invite", "remove", "restore", "role", "switch"]),
                name="accounts_audit_action_valid",
            )
        ]

    def __str__(self) -> str:
        return f"{self.action} of {self.person_id or 'the organisation'} at {self.at:%Y-%m-%d %H:%M}"
