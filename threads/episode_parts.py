"""Episode parts: the message each episode was cut from, its number there, and the message it is linked to."""

# A message is one event, or consecutive events posted as its parts (ids `<message>.<n>` counting on by one, with
# the same role, author, time and place: the events endpoint's long-message rule). Its episodes are numbered on
# across its events, so the thread walk (`threads.recall`) can step to a part's neighbours in its own message and
# to the messages around it, whatever their lengths.
#
# The link is the context a part keeps without copying it: an assistant's part points at the last part of the
# user message before it in the same place (the question it answers); a user's part at the first part of the
# first answer that points at it, filled in when that answer is consolidated, in this run or a later one. A
# link is an id, never words: recall and render show only the part's own body, and erasure clears the links
# with the events they lead to (`episode_parts_erase`).

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

from django.db.models import F

from memories.models import Memory
from threads.models import EpisodePart, Thread, ThreadEvent

_PART_ID = re.compile(r"^(?P<message>.+)\.(?P<n>\d+)$")


def continues(before: ThreadEvent, event: ThreadEvent) -> bool:
    """Whether `event` is the next event of the message that `before` belongs to."""
    if event.sequence != before.sequence + 1:
        return False
    same = ("role", "author", "occurred_at", "place_channel", "place_kind")
    if any(getattr(event, name) != getattr(before, name) for name in same):
        return False
    first, second = _PART_ID.match(before.external_id), _PART_ID.match(event.external_id)
    return bool(first and second and first["message"] == second["message"] and int(second["n"]) == int(first["n"]) + 1)


@dataclass
class _Message:
    """One message's episodes written in this run, numbered from `start` (past those kept in an earlier run)."""

    event: ThreadEvent  # its first event in this run
    key: int  # the sequence of its first event
    rows: list[Memory] = field(default_factory=list)
    start: int = 1
    context_id: UUID | None = None

    @property
    def total(self) -> int:
        return self.start - 1 + len(self.rows)


def _messages(events: Sequence[ThreadEvent], rows: Sequence[Memory]) -> list[_Message]:
    """The episodes grouped by message, in the thread's order (`events[i]` is the event of `rows[i]`)."""
    messages: list[_Message] = []
    last: ThreadEvent | None = None
    for event, row in zip(events, rows, strict=True):
        if last is None or not (event is last or continues(last, event)):
            messages.append(_Message(event=event, key=event.sequence))
        messages[-1].rows.append(row)
        last = event
    return messages


def _continue_earlier(thread: Thread, first: _Message) -> None:
    """A message whose earlier events were consolidated in an earlier run: its parts number on from theirs."""
    before = ThreadEvent.objects.filter(
        organisation_id=thread.organisation_id, thread=thread, sequence=first.event.sequence - 1
    ).first()
    if before is None or not continues(before, first.event):
        return
    kept = EpisodePart.objects.filter(organisation_id=thread.organisation_id, memory__source_event=before).first()
    if kept is not None:
        first.key, first.start = kept.message, kept.parts + 1


def _question_kept(thread: Thread, channel: str, *, before: int) -> tuple[UUID, int] | None:
    """The last part of the latest user message kept in an earlier run in this place, with its message."""
    return (
        EpisodePart.objects.filter(
            organisation_id=thread.organisation_id,
            thread=thread,
            message__lt=before,
            part=F("parts"),
            memory__redacted_at__isnull=True,
            memory__source_event__role="user",
            memory__source_event__place_channel=channel,
        )
        .order_by("-message")
        .values_list("memory_id", "message")
        .first()
    )


def episode_parts_write(*, thread: Thread, events: Sequence[ThreadEvent], rows: Sequence[Memory]) -> int:
    """Record the parts of the episodes just written (inside the consolidation transaction) and link each to
    its context; returns how many parts were recorded."""
    if not rows:
        return 0
    organisation_id = thread.organisation_id
    messages = _messages(events, rows)
    _continue_earlier(thread, messages[0])
    if messages[0].start > 1:
        EpisodePart.objects.filter(organisation_id=organisation_id, thread=thread, message=messages[0].key).update(
            parts=messages[0].total
        )
    answered_earlier = _link(thread, messages)
    EpisodePart.objects.bulk_create(
        EpisodePart(
            organisation_id=organisation_id,
            memory=row,
            thread=thread,
            message=message.key,
            part=message.start + offset,
            parts=message.total,
            context_id=message.context_id,
        )
        for message in messages
        for offset, row in enumerate(message.rows)
    )
    for key, answer in answered_earlier.items():
        EpisodePart.objects.filter(
            organisation_id=organisation_id, thread=thread, message=key, context__isnull=True
        ).update(context_id=answer)
    return len(rows)


def _link(thread: Thread, messages: Sequence[_Message]) -> dict[int, UUID]:
    """Each answer's question, and each question's first answer where it is in this run; returns the first
    answer of each question kept (or begun) in an earlier run, by that question's message."""
    answered_earlier: dict[int, UUID] = {}
    asked_here: dict[str, _Message] = {}  # each place's latest user message in this run
    # Each place's latest question from an earlier run, read once: this run's parts are not written yet, so it
    # is the same for every answer of the run that has no question of its own before it.
    asked_before: dict[str, tuple[UUID, int] | None] = {}
    for message in messages:
        channel = message.event.place_channel
        if message.event.role == "user":
            asked_here[channel] = message
        if message.event.role != "assistant":
            continue
        asked = asked_here.get(channel)
        if asked is None:
            if channel not in asked_before:
                asked_before[channel] = _question_kept(thread, channel, before=message.key)
            kept = asked_before[channel]
            if kept is None:
                continue
            message.context_id, key = kept
            answered_earlier.setdefault(key, message.rows[0].pk)
            continue
        message.context_id = asked.rows[-1].pk
        asked.context_id = asked.context_id or message.rows[0].pk
        if asked.start > 1:
            answered_earlier.setdefault(asked.key, message.rows[0].pk)
    return answered_earlier


def episode_parts_erase(*, organisation_id, event_ids: Sequence[int]) -> int:
    """Erasure's share: the parts of the erased events' episodes go, and every link to one of those episodes is
    cleared; returns how many links and parts went. A part's own event decides its erasure, never its link."""
    cleared = EpisodePart.objects.filter(
        organisation_id=organisation_id, context__source_event_id__in=list(event_ids)
    ).update(context=None)
    removed, _ = EpisodePart.objects.filter(
        organisation_id=organisation_id, memory__source_event_id__in=list(event_ids)
    ).delete()
    return cleared + removed
