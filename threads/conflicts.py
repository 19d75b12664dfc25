"""Conflicts are shown, not buried: a learned fact never silently replaces what a person said about themselves."""

# A person's own fact (bucket `user`, about them) gets the key consolidation
# computes for learned facts, when it is written: the `rules` extractor reads
# its body as the person's own words (or as the third-person sentence the
# extractor writes), and a `Learning` row without a thread keeps the key.
#
# A learned fact with the same subject and key that says something else never
# supersedes the person's fact: it is written already superseded by it (so it
# is neither recalled, rendered nor counted toward an agent's cap, and expires
# like any learned fact), and its learning is `pending`. The person sees it on
# their pages ("an agent inferred X; you said Y") and accepts it (the learned
# fact supersedes theirs) or dismisses it (it is erased, with its receipt).

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Organisation, User
from memories.db.predicates import current_q, unexpired_q
from memories.models import Bucket, Memory, SourceKind, SubjectType
from memories.services import memory_redact, memory_supersede
from threads.extractors.base import Candidate, EventView, normalise
from threads.extractors.rules import RulesExtractor
from threads.models import Learning, LearningSource

PERSON_EXTRACTOR = "person"


@dataclass(frozen=True)
class Keyed:
    key: str
    body: str  # the canonical sentence consolidation would have written for it


def user_fact_keyed(body: str, name: str) -> Keyed | None:
    """The key (and canonical sentence) of a person's own fact, by the extractor's own rules."""
    text = (body or "").strip()
    if not text or not name:
        return None
    extractor = RulesExtractor()
    view = EventView(sequence=1, role="user", author=name, author_id="person", text=text)
    for candidate in extractor.extract([view]):
        if candidate.key:
            return Keyed(candidate.key, candidate.body)
    # The extractor's own third-person sentences ("mona's timezone is CET"), as a person may copy them.
    own = re.escape(name)
    mine = re.match(rf"^{own}'s\s+(?P<x>[a-z][a-z' -]{{0,60}}?)\s+(?:is|are)\s+(?P<y>.+?)[.!]?$", text, re.IGNORECASE)
    if mine:
        first_person = f"My {mine['x']} is {mine['y']}"
        found = extractor.extract(
            [EventView(sequence=1, role="user", author=name, author_id="person", text=first_person)]
        )
        if found:
            return Keyed(found[0].key, found[0].body)
    called = re.match(rf"^{own}\s+wants to be called\s+(?P<n>.+?)[.!]?$", text, re.IGNORECASE)
    if called:
        return Keyed("called", f"{name} wants to be called {called['n']}")
    return None


def user_fact_keys_write(*, memories: Sequence[Memory]) -> list[Learning]:
    """Give each person's own fact about themself its key, as it is written: at most one read of the subjects'
    usernames (none when each fact's writer is its subject) and one insert, however many facts a write (or a
    batch's one insert) brought."""
    about_self = [
        memory
        for memory in memories
        if memory.bucket == Bucket.USER and memory.subject_type == SubjectType.USER and memory.subject_id
    ]
    if not about_self:
        return []
    # A person's own fact is mostly written by its subject, whose row the write holds already: no read for them.
    names = {
        memory.subject_id: memory.written_by.username
        for memory in about_self
        if Memory.written_by.is_cached(memory)
        and memory.written_by is not None
        and str(memory.written_by.pk) == memory.subject_id
    }
    unread = {memory.subject_id for memory in about_self} - names.keys()
    if unread:
        names.update({str(pk): name for pk, name in User.objects.filter(pk__in=unread).values_list("pk", "username")})
    keys = []
    for memory in about_self:
        keyed = user_fact_keyed(memory.body, names.get(str(memory.subject_id), ""))
        if keyed is not None:
            keys.append(
                Learning(
                    organisation_id=memory.organisation_id,
                    memory=memory,
                    thread=None,
                    key=keyed.key[:200],
                    extractor=PERSON_EXTRACTOR,
                )
            )
    return Learning.objects.bulk_create(keys)


def on_user_facts_remembered(sender, memories: Sequence[Memory], **kwargs) -> None:
    """Receiver of `memories.signals.user_facts_remembered`: the new user facts get their keys in their transaction."""
    user_fact_keys_write(memories=memories)


def own_fact_for(*, organisation_id, candidate: Candidate, now: datetime) -> Memory | None:
    """The person's live own fact with this candidate's subject and key, if any.

    A quarantined row (a fact planted about this person by someone else before the rule held) is not theirs
    and never holds their statement back.
    """
    if not candidate.author_id or not candidate.key:
        return None
    return (
        Memory.objects.filter(
            current_q(),
            unexpired_q(now),
            organisation_id=organisation_id,
            quarantined_at__isnull=True,
            bucket=Bucket.USER,
            subject_type=SubjectType.USER,
            subject_id=candidate.author_id,
            learning__key=candidate.key,
        )
        .order_by("-created_at")
        .first()
    )


def says_the_same(own: Memory, candidate: Candidate, name: str) -> bool:
    keyed = user_fact_keyed(own.body, name)
    return normalise(own.body) == normalise(candidate.body) or (
        keyed is not None and normalise(keyed.body) == normalise(candidate.body)
    )


def pending_already(*, own: Memory, candidate: Candidate) -> bool:
    """The same inference is already waiting for the person's decision."""
    return Learning.objects.filter(
        organisation_id=own.organisation_id,
        conflict=Learning.Conflict.PENDING,
        conflicts_with=own,
        memory__body__iexact=candidate.body,
        memory__redacted_at__isnull=True,
    ).exists()


# --- Reads and decisions ---------------------------------------------------------------


def pending_conflicts(*, organisation: Organisation, subject_ids, now: datetime | None = None) -> QuerySet[Learning]:
    """Pending conflicts with these people's own facts, not yet expired or erased, newest first."""
    now = now or timezone.now()
    return (
        Learning.objects.filter(
            organisation=organisation,
            conflict=Learning.Conflict.PENDING,
            conflicts_with__subject_type=SubjectType.USER,
            conflicts_with__subject_id__in=[str(pk) for pk in subject_ids],
            memory__redacted_at__isnull=True,
            memory__expires_at__gt=now,
        )
        .select_related("memory", "memory__agent", "conflicts_with", "thread")
        .order_by("-created_at", "-id")
    )


def _pending_locked(*, organisation: Organisation, learning_id: int) -> Learning:
    learning = (
        Learning.objects.select_for_update(of=("self",))
        .select_related("memory", "conflicts_with", "memory__agent")
        .filter(organisation=organisation, pk=learning_id)
        .first()
    )
    if learning is None or learning.conflict != Learning.Conflict.PENDING:
        raise ValidationError({"conflict": ["This conflict was already decided or does not exist."]})
    return learning


def _record_decision(
    learning: Learning, decision: str, *, actor: User, now: datetime, also: Sequence[str] = ()
) -> None:
    """The person's decision on a pending conflict, with when and by whom (and any `also` fields changed)."""
    learning.conflict = decision
    learning.conflict_decided_at = now
    learning.conflict_decided_by = actor
    learning.save(update_fields=["conflict", "conflict_decided_at", "conflict_decided_by", *also])


def conflict_accept(
    *, organisation: Organisation, learning_id: int, actor: User, now: datetime | None = None
) -> Memory:
    """The person accepts the inference: it supersedes their own fact (a new learned row, with its sources)."""
    now = now or timezone.now()
    with transaction.atomic():
        learning = _pending_locked(organisation=organisation, learning_id=learning_id)
        inferred, own = learning.memory, learning.conflicts_with
        assert own is not None  # a pending conflict names the fact it contests (threads_learning_conflict_shape)
        if inferred.redacted_at is not None or (inferred.expires_at and inferred.expires_at <= now):
            raise ValidationError({"conflict": ["The inference expired or was erased; nothing to accept."]})
        replacement = memory_supersede(
            memory=own,
            body=inferred.body,
            actor=actor,
            agent=inferred.agent,
            overrides={
                "source_kind": SourceKind.THREAD_EVENT,
                "source_ref": inferred.source_ref,
                "source_label": inferred.source_label,
                "tier": inferred.tier,
                "occurred_at": inferred.occurred_at,
            },
            now=now,
        )
        kept = Learning.objects.create(
            organisation=organisation,
            memory=replacement,
            thread=learning.thread,
            key=learning.key,
            extractor=learning.extractor,
        )
        LearningSource.objects.bulk_create(
            [
                LearningSource(organisation=organisation, learning=kept, event_id=source.event_id)
                for source in learning.sources.all()
            ]
        )
        _record_decision(learning, Learning.Conflict.ACCEPTED, actor=actor, now=now)
    return replacement


def conflict_dismiss(
    *, organisation: Organisation, learning_id: int, actor: User, now: datetime | None = None
) -> Memory:
    """The person dismisses the inference: it is erased, keeping its receipt; their fact stands."""
    now = now or timezone.now()
    with transaction.atomic():
        learning = _pending_locked(organisation=organisation, learning_id=learning_id)
        erased = memory_redact(
            memory=learning.memory,
            reason=f"dismissed by {actor.username}: it contradicted their own fact",
            actor=actor,
            now=now,
        )
        learning.key = ""  # a key can repeat the value it was about
        _record_decision(learning, Learning.Conflict.DISMISSED, actor=actor, now=now, also=["key"])
    return erased
