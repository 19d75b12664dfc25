"""Writes an agent's turn makes in its place: remembering under the scope rules, and pinning.

Each action runs in one transaction and writes its audit row there. The organisation, agent and person
always come from the authenticated principal, passed in by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.utils import timezone

from accounts.models import Agent, Membership, Organisation, User
from accounts.people import person_lookup
from memories.models import Author, Bucket, Memory, Scope, SourceKind, SubjectType, Tier
from memories.places import PlaceInTurn
from memories.scopes import PERSON, WORKSPACE, ScopeChoice, scope_for, solo_person
from memories.services import memory_set_pinned
from memories.writer import MemoryDraft, Together, Writer, memory_remember


def user_subject_id(*, organisation: Organisation, subject_id: str) -> str:
    """A user subject is stored by the person's id; a handle or username of the organisation is resolved."""
    membership = person_lookup(organisation=organisation, name=(subject_id or "").strip())
    if membership is None:
        raise ValidationError({"subject_id": ["A user subject must be a person of your organisation."]})
    return str(membership.user_id)


def _only_for_id(*, organisation: Organisation, resolved: PlaceInTurn, only_for: str, user: User | None) -> str:
    """The person `only_for` keeps a fact for: the writer themself, or (for an agent) a person of the place."""
    membership = person_lookup(organisation=organisation, name=only_for)
    if user is not None:
        if membership is None or membership.user_id != user.pk:
            raise ValidationError({"only_for": ["A person may keep a fact only for themself."]})
        return str(user.pk)
    if membership is None or not (resolved.place.kind == "public" or str(membership.user_id) in resolved.place.people):
        raise ValidationError(
            {"only_for": [f"only_for names a person of this place; {only_for!r} is not in {resolved.place.channel}."]}
        )
    return str(membership.user_id)


def _write_scope(
    *, organisation: Organisation, resolved: PlaceInTurn, scope: str | None, only_for: str | None, user: User | None
) -> ScopeChoice:
    """The scope a write in this place goes to, with the reason when it is not the one asked for."""
    place = resolved.place
    only_for_id = None
    if only_for:
        only_for_id = _only_for_id(organisation=organisation, resolved=resolved, only_for=only_for, user=user)
    narrowed = ""
    if scope == PERSON and not only_for_id and solo_person(place) is None:
        if user is None:
            raise ValidationError(
                {
                    "scope": [
                        "A person fact is written only in a DM with exactly one person; in this "
                        f"{place.kind} channel name the person with only_for, or drop scope."
                    ]
                }
            )
        only_for_id = str(user.pk)
        narrowed = "a person fact outside a DM with one person is kept for you alone"
    if scope == WORKSPACE and user is not None and not _is_owner(organisation=organisation, user=user):
        # A workspace fact reaches every agent's prompt everywhere, and only owners change one.
        scope = None
        narrowed = "only owners write workspace facts; kept in this place"
    choice = scope_for(place, scope, only_for_id)
    return replace(choice, reason=narrowed) if narrowed else choice


def _subject(
    *, organisation: Organisation, choice: ScopeChoice, subject_type: str | None, subject_id: str
) -> tuple[str, str]:
    """Whom the fact is about: said by the caller, or, only in a person scope, that person."""
    if subject_type is None:
        if choice.scope != Scope.PERSON:
            # A personal fact must name whom it is about; it is never defaulted to nobody.
            raise ValidationError(
                {
                    "subject_type": [
                        "Say whom this fact is about: user or candidate with subject_id, or workspace for an "
                        "operational fact. Only a fact kept in a person scope (a DM, or only_for) defaults to "
                        "that person."
                    ]
                }
            )
        return SubjectType.USER, choice.ref
    if subject_type == SubjectType.USER:
        return subject_type, user_subject_id(organisation=organisation, subject_id=subject_id)
    return subject_type, subject_id or ""


@dataclass(frozen=True)
class RememberRequest:
    """What a caller asks to remember in a place, as the remember endpoint takes it (place aside)."""

    body: str
    scope: str | None = None
    only_for: str | None = None
    subject_type: str | None = None
    subject_id: str = ""
    tier: str = Tier.LOG
    pinned: bool = False
    expires_at: datetime | None = None
    ttl_days: int | None = None
    source_kind: str | None = None
    source_ref: str = ""
    source_label: str = ""
    run_id: str = ""
    occurred_at: datetime | None = None

    @classmethod
    def of(cls, data: Mapping) -> RememberRequest:
        """The request in a validated input's fields; the rest of it (the place, a key) is left out."""
        return cls(**{name: data[name] for name in _REQUEST_FIELDS if name in data})


_REQUEST_FIELDS = tuple(field.name for field in fields(RememberRequest))


def memory_remember_in_place(
    request: RememberRequest,
    *,
    organisation: Organisation,
    resolved: PlaceInTurn,
    writer: Agent | User,
    now: datetime | None = None,
    together: Together | None = None,
) -> tuple[Memory, ScopeChoice]:
    """Remember one fact said in a place, in the narrowest scope the place allows.

    An agent writes an inference (learned, by the model), a person a note of their own; a person fact asked for
    outside a DM with one person is refused for an agent (it must say whom, `only_for`) and kept for the person
    themself when a person writes it."""
    user = None if isinstance(writer, Agent) else writer
    now = now or timezone.now()
    choice = _write_scope(
        organisation=organisation, resolved=resolved, scope=request.scope, only_for=request.only_for, user=user
    )
    expires_at = _expiry(expires_at=request.expires_at, ttl_days=request.ttl_days, now=now)
    subject_type, subject_id = _subject(
        organisation=organisation, choice=choice, subject_type=request.subject_type, subject_id=request.subject_id
    )
    is_agent = user is None
    draft = MemoryDraft(
        organisation=organisation,
        bucket=Bucket.LEARNED if is_agent else Bucket.USER,
        author=Author.MODEL if is_agent else Author.PERSON,
        body=request.body,
        source_kind=request.source_kind or (SourceKind.MESSAGE if is_agent else SourceKind.PERSON),
        owner=user,
        subject_type=subject_type,
        subject_id=subject_id,
        scope=choice.scope,
        scope_ref=choice.ref,
        scope_label=_scope_label(organisation=organisation, resolved=resolved, choice=choice),
        source_ref=request.source_ref,
        source_label=request.source_label,
        source_run_id=request.run_id,
        tier=request.tier,
        pinned=request.pinned,
        expires_at=expires_at,
        occurred_at=request.occurred_at,
    )
    # The live-fact caps are held by the writer itself, on every path that writes.
    memory = memory_remember(draft, writer=Writer.of(writer), now=now, together=together)
    return memory, choice


def _expiry(*, expires_at: datetime | None, ttl_days: int | None, now: datetime) -> datetime | None:
    """The expiry a call gives, as a time or in days from now; None leaves the tier's default."""
    if expires_at is not None and ttl_days is not None:
        raise ValidationError({"ttl_days": ["Give expires_at or ttl_days, not both."]})
    return now + timedelta(days=ttl_days) if ttl_days is not None else expires_at


def _scope_label(*, organisation: Organisation, resolved: PlaceInTurn, choice: ScopeChoice) -> str:
    """How a fact's scope is named: the channel, or the person (as the place names them, else as they are known)."""
    if choice.scope == Scope.CHANNEL:
        return resolved.place.channel
    if choice.scope == Scope.PERSON:
        return resolved.label_for(choice.ref) or _label_of(organisation=organisation, person_id=choice.ref)
    return ""


def _is_owner(*, organisation: Organisation, user: User) -> bool:
    return Membership.objects.filter(organisation=organisation, user=user, role=Membership.Role.OWNER).exists()


def _label_of(*, organisation: Organisation, person_id: str) -> str:
    membership = person_lookup(organisation=organisation, name=person_id)
    return membership.label if membership is not None else ""


def memory_pin(*, memory: Memory, pinned: bool, actor: User | None = None, agent: Agent | None = None) -> Memory:
    if memory.superseded_by_id is not None:
        raise ValidationError({"memory": ["Only the current version of a memory can be pinned."]})
    return memory_set_pinned(memory=memory, pinned=pinned, actor=actor, agent=agent)
