"""Erasure reaching what threads hold of a subject: the events they wrote or were said to them, and what was
learned from those events (learned memories, episodes, learning keys).

Connected to `memories.signals.subject_erased` and `subject_exporting` (threads/apps.py), so a subject's
erasure and export reach the same events in the same transaction, without memories importing threads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import partial

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.erasure import PersonNames, person_names
from accounts.models import Agent, Organisation, User
from memories.models import Bucket, Memory, MemoryAudit, SubjectType
from memories.selectors import in_a_dm_with
from memories.services import memory_redact
from threads.episode_parts import episode_parts_erase
from threads.models import Learning, LearningSource, ThreadEvent
from threads.selectors import learned_memories_orphaned_by

# A word a fact can quote: four letters or more, so "is", "the" and "and" shared by chance do not count.
_QUOTABLE_WORD = re.compile(r"\w{4,}")


def _names_of(*, organisation: Organisation, subject_type: str, subject_id: str) -> PersonNames:
    if subject_type == SubjectType.USER:
        return person_names(organisation=organisation, person_id=subject_id)
    return PersonNames(keys=(subject_id,)) if subject_id else PersonNames()


def _posted_under(keys: Sequence[str]) -> Q:
    """Events whose author label is one of these names and that are linked to no person: posted under a
    person's handle or username before they had a record."""
    return Q(author_user__isnull=True, author__in=list(keys)) if keys else Q(pk__in=[])


def events_about_subject(*, organisation: Organisation, subject_type: str, subject_id: str, memory_ids) -> Q:
    """The events a subject request reaches: what they wrote (under their record, or under their handle
    before they had one), every event of a DM with them, and what taught their memories."""
    reached = Q(
        pk__in=LearningSource.objects.filter(
            organisation=organisation, learning__memory_id__in=list(memory_ids)
        ).values("event_id")
    )
    if subject_type == SubjectType.USER and subject_id:
        keys = person_names(organisation=organisation, person_id=subject_id).keys
        reached |= (
            Q(author_user_id=subject_id)
            | _posted_under(keys)
            | in_a_dm_with(organisation=organisation, person_id=subject_id)
        )
    return reached


def on_subject_exporting(sender, **kwargs) -> dict[str, list]:
    """Receiver of memories.signals.subject_exporting: the events an erasure of this subject would erase."""
    organisation = kwargs["organisation"]
    reached = events_about_subject(
        organisation=organisation,
        subject_type=kwargs["subject_type"],
        subject_id=kwargs["subject_id"],
        memory_ids=kwargs.get("memory_ids") or [],
    )
    events = (
        ThreadEvent.objects.filter(organisation=organisation)
        .filter(reached)
        .select_related("thread")
        .order_by("occurred_at", "pk")
    )
    return {
        "thread_events": [
            {
                "thread": event.thread.external_id,
                "sequence": event.sequence,
                "id": event.external_id,
                "role": event.role,
                "author": event.author,
                "text": event.text,
                "time": event.occurred_at,
                "place": {"channel": event.place_channel, "kind": event.place_kind},
                "erased_at": event.erased_at,
            }
            for event in events
        ]
    }


def thread_subject_erase(
    *,
    organisation: Organisation,
    subject_type: str,
    subject_id: str,
    memory_ids: Sequence[str],
    reason: str,
    actor: User | None = None,
    agent: Agent | None = None,
    now: datetime | None = None,
) -> dict[str, int]:
    """Erasure reaching what was derived from a subject: thread events, then learned memories.

    The events whose words go (the row stays, with a receipt):
    - every event a user subject wrote, those posted under their handle before they had a record
      included (linked to them now, so the receipt says whose they were);
    - every event of a DM with that user (their person scope: the agent's replies echo them);
    - every event that taught one of the memories this erasure removed (`memory_ids`).
    Then every learned memory left with no source that still has its words, or that quotes the subject
    though a live source keeps it (`quotes_the_subject`), and every episode of an erased event (`_episodes_erase`).
    """
    now = now or timezone.now()
    reason = (reason or "").strip() or f"subject erasure for {subject_type} {subject_id}"
    names = _names_of(organisation=organisation, subject_type=subject_type, subject_id=subject_id)
    with transaction.atomic():
        if subject_type == SubjectType.USER and subject_id:
            posted = ThreadEvent.objects.filter(organisation=organisation).filter(_posted_under(names.keys))
            posted.update(author_user_id=subject_id)
        said = _events_reached(
            organisation=organisation, subject_type=subject_type, subject_id=subject_id, memory_ids=memory_ids
        )
        event_ids = list(said)
        erased_events = ThreadEvent.objects.filter(organisation=organisation, pk__in=event_ids).update(
            text="", erased_at=now, erasure_reason=reason[:500]
        )
        erase = partial(_erase_each, actor=actor, agent=agent, now=now)
        orphans, orphan_vectors = erase(
            learned_memories_orphaned_by(organisation=organisation, event_ids=event_ids),
            reason=f"learned only from erased thread events ({reason})",
        )
        quoting, quoting_vectors = erase(
            _learned_quoting(organisation=organisation, said=said, names=names.every),
            reason=f"quoted erased thread events ({reason})",
        )
        episodes, episode_vectors, links_cleared = _episodes_erase(organisation, event_ids, erase, reason=reason)
        # A learning's key repeats the value it was about ("prefers:<what>"): an erased memory's goes too.
        erased_keys = Learning.objects.filter(organisation=organisation, memory__redacted_at__isnull=False)
        keys_cleared = erased_keys.exclude(key="").update(key="")
    return {
        "thread_events_erased": erased_events,
        "derived_memories_erased": orphans + quoting + episodes,
        "derived_vectors_cleared": orphan_vectors + quoting_vectors + episode_vectors,
        "learning_keys_cleared": keys_cleared,
        "episode_links_cleared": links_cleared,
    }


def _episodes_erase(
    organisation: Organisation, event_ids: Sequence[int], erase: Callable, *, reason: str
) -> tuple[int, int, int]:
    """Every episode of an erased event (episodes keep an event's words), then their parts and every other
    episode's link to them (a context leads to no erased event); returns episodes, vectors and links."""
    episodes, vectors = erase(
        Memory.objects.filter(
            organisation=organisation, source_event_id__in=event_ids, redacted_at__isnull=True
        ).order_by("created_at", "id"),
        reason=f"episode of an erased thread event ({reason})",
    )
    return episodes, vectors, episode_parts_erase(organisation_id=organisation.pk, event_ids=event_ids)


def _events_reached(
    *, organisation: Organisation, subject_type: str, subject_id: str, memory_ids: Sequence[str]
) -> dict[int, str]:
    """The events an erasure takes the words of, still unerased, locked, with their words: those about the
    subject (`events_about_subject`) and those whose episodes it erased."""
    reached = events_about_subject(
        organisation=organisation, subject_type=subject_type, subject_id=subject_id, memory_ids=memory_ids
    )
    # An erased episode takes its event's words with it (and so the event's other parts).
    reached |= Q(
        pk__in=Memory.objects.filter(
            organisation=organisation, pk__in=list(memory_ids), source_event__isnull=False
        ).values("source_event_id")
    )
    events = ThreadEvent.objects.select_for_update(no_key=True).filter(
        organisation=organisation, erased_at__isnull=True
    )
    return dict(events.filter(reached).values_list("pk", "text"))


def quotes_the_subject(body: str, *, erased: Iterable[str], live: Iterable[str], names: Iterable[str]) -> bool:
    """Whether a learned fact's text quotes an erased subject: it names them, or it has a word (four letters
    or more) that its erased sources said and none of its live sources did. Errs towards erasure."""
    if any(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", body, re.IGNORECASE) for name in names):
        return True
    only_erased = _words(*erased) - _words(*live)
    return bool(_words(body) & only_erased)


def _words(*texts: str) -> set[str]:
    return {word.casefold() for text in texts for word in _QUOTABLE_WORD.findall(text)}


def _learned_quoting(*, organisation: Organisation, said: dict[int, str], names: Sequence[str]) -> list[Memory]:
    """The learned memories, still live, that one of these erased events taught and whose text quotes the
    subject (what they said, `said`, or their names), though another source keeps its words."""
    taught = Memory.objects.filter(
        organisation=organisation,
        bucket=Bucket.LEARNED,
        redacted_at__isnull=True,
        learning__sources__event_id__in=list(said),
    ).distinct()
    candidates = {memory.pk: memory for memory in taught.order_by("created_at", "id")}
    sources: dict[object, tuple[list[str], list[str]]] = {pk: ([], []) for pk in candidates}
    rows = LearningSource.objects.filter(organisation=organisation, learning__memory_id__in=list(candidates))
    for memory_id, event_id, text in rows.values_list("learning__memory_id", "event_id", "event__text"):
        erased, live = sources[memory_id]
        if event_id in said:
            erased.append(said[event_id])
        elif text:  # an event erased before has no words left to quote or to share
            live.append(text)
    return [
        memory
        for pk, memory in candidates.items()
        if quotes_the_subject(memory.body, erased=sources[pk][0], live=sources[pk][1], names=names)
    ]


def _erase_each(
    memories: Iterable[Memory], *, reason: str, actor: User | None, agent: Agent | None, now: datetime
) -> tuple[int, int]:
    """Erase each memory, keeping its receipt; returns how many, and how many of them had a vector."""
    erased = vectors = 0
    for memory in memories:
        vectors += memory.embedding is not None
        memory_redact(
            memory=memory, reason=reason[:500], actor=actor, agent=agent, action=MemoryAudit.Action.REDACT, now=now
        )
        erased += 1
    return erased, vectors


def on_subject_erased(sender, **kwargs) -> dict[str, int]:
    """Receiver of memories.signals.subject_erased."""
    return thread_subject_erase(
        organisation=kwargs["organisation"],
        subject_type=kwargs["subject_type"],
        subject_id=kwargs["subject_id"],
        memory_ids=kwargs.get("memory_ids") or [],
        reason=kwargs.get("reason") or "",
        actor=kwargs.get("actor"),
        agent=kwargs.get("agent"),
        now=kwargs.get("now"),
    )
