"""Events ingested into a thread: stored in order, once per event id, each refused on its own for
where it happens or whom it names; consolidation is queued after commit (`threads.consolidation`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from accounts.models import Agent, AgentToken, Organisation
from accounts.people import people_by_name
from lib.errors import ApplicationError
from lib.tasks import enqueue_after_commit
from memories.models import CONTROL_CHARS
from memories.places import PlaceConflict, PlaceInTurn, PlaceNotFound, place_for_turn
from threads.models import Thread, ThreadEvent

logger = logging.getLogger(__name__)

CONSOLIDATE_THREAD_TASK = "threads.tasks.consolidate_thread"  # the name threads.tasks pins


@dataclass(frozen=True)
class IngestedEvent:
    index: int  # the event's position in the call, from 0
    sequence: int
    external_id: str
    duplicate: bool


@dataclass(frozen=True)
class RefusedEvent:
    """An event refused for who or where it names, in the API's error shape; nothing of it is stored."""

    index: int
    code: str
    detail: str
    fields: dict[str, list[str]]


@dataclass(frozen=True)
class IngestOutcome:
    """What became of each event of a call: stored or already stored (`events`), or refused."""

    events: list[IngestedEvent]
    refused: list[RefusedEvent]


class EventsRefused(ApplicationError):
    """Every event of the call was refused, so nothing was written (not even the thread)."""

    code = "invalid"
    http_status = 422

    def __init__(self, refused: list[RefusedEvent]):
        super().__init__("Every event was refused; nothing was stored.")
        self.refused = refused

    def fields(self) -> dict[str, list[str]]:
        return {name: messages for event in self.refused for name, messages in event.fields.items()}


def enqueue_consolidation(thread_id: int) -> None:
    """Ask a worker to consolidate the thread, after commit. A broker that is down loses
    nothing: the events are stored and the beat sweep finds threads behind their watermark."""
    enqueue_after_commit(
        CONSOLIDATE_THREAD_TASK,
        args=[thread_id],
        queue="consolidate",
        on_broker_down=lambda error: logger.warning(
            "could not enqueue consolidation of thread %s (%s); the sweep will", thread_id, error
        ),
    )


def _check_text(text: str, index: int) -> None:
    name = f"events.{index}.text"
    if not isinstance(text, str) or not text.strip():
        raise ValidationError({name: ["An event needs text; it is empty or only whitespace."]})
    if len(text) > settings.THREAD_EVENT_MAX_CHARS:
        raise ValidationError(
            {name: [f"The text is {len(text)} characters; the limit is {settings.THREAD_EVENT_MAX_CHARS}."]}
        )
    if CONTROL_CHARS.search(text):
        raise ValidationError({name: ["The text contains control characters; only newline and tab are allowed."]})


def _resolve_places(
    *, organisation: Organisation, agent: Agent, token: AgentToken | None, events: Sequence[dict]
) -> list[PlaceInTurn | RefusedEvent]:
    """Each event's place from its record, or the event's refusal when the caller may not act there
    or the place names someone it cannot; ingest never changes who is in a place."""
    resolved: dict[tuple, PlaceInTurn | ApplicationError | ValidationError] = {}
    out: list[PlaceInTurn | RefusedEvent] = []
    for index, event in enumerate(events):
        place = event["place"]
        key = (place["channel"], place["kind"], tuple(place.get("people") or ()))
        if key not in resolved:
            try:
                resolved[key] = place_for_turn(
                    organisation=organisation,
                    channel=key[0],
                    kind=key[1],
                    people=list(key[2]),
                    agent=agent,
                    token=token,
                )
            except (ValidationError, PlaceNotFound, PlaceConflict) as error:
                resolved[key] = error  # the same refusal for every event naming this place
        found = resolved[key]
        out.append(found if isinstance(found, PlaceInTurn) else _refusal(index, found))
    return out


def _refusal(index: int, error: ApplicationError | ValidationError) -> RefusedEvent:
    """An event's refusal, its fields named as the whole call names them (`events.3.place.people`)."""
    if isinstance(error, ValidationError):
        named = error.message_dict if hasattr(error, "error_dict") else {"place": error.messages}
        fields = {f"events.{index}.{name}": list(messages) for name, messages in named.items()}
        names = sorted(fields)
        return RefusedEvent(index=index, code="invalid", detail=f"{names[0]}: {fields[names[0]][0]}", fields=fields)
    # Where the caller may not act has no field of its own: the place is named.
    field = f"events.{index}.{error.field or 'place'}"
    return RefusedEvent(index=index, code=error.code, detail=error.message, fields={field: [error.message]})


def thread_events_ingest(
    *,
    organisation: Organisation,
    agent: Agent,
    thread_id: str,
    events: Sequence[dict],
    token: AgentToken | None = None,
    episodes: bool | None = None,
) -> tuple[Thread, IngestOutcome]:
    """Store events of a thread in order, skip ones already stored (same event id), and queue consolidation.

    Each event is `{id?, role, author, text, time, place: {channel, kind, people}}`;
    `people` and `author` are usernames. An author who is not an account holder
    of the organisation is kept as a label; nothing personal is learned about them.
    An event in a place the caller may not act in, or naming someone who is not a person
    of the organisation, is refused on its own and the rest are stored; when every event is
    refused nothing is written and `EventsRefused` says why for each.
    """
    for index, event in enumerate(events):
        _check_text(event["text"], index)
    places = _resolve_places(organisation=organisation, agent=agent, token=token, events=events)
    refused = [place for place in places if isinstance(place, RefusedEvent)]
    if len(refused) == len(events):
        raise EventsRefused(refused)
    accounts = _author_accounts(organisation=organisation, events=events)
    with transaction.atomic():
        thread = _thread_locked(organisation=organisation, external_id=thread_id)
        if episodes is not None and thread.episodes != episodes:
            thread.episodes = episodes  # the thread's own switch; consolidation reads it per batch
            thread.save(update_fields=["episodes", "updated_at"])
        rows, outcome = _new_events(
            organisation=organisation, thread=thread, agent=agent, events=events, places=places, accounts=accounts
        )
        if rows:
            ThreadEvent.objects.bulk_create(rows)
            thread.last_sequence = rows[-1].sequence
            thread.save(update_fields=["last_sequence", "updated_at"])
            enqueue_consolidation(thread.pk)
    return thread, IngestOutcome(events=outcome, refused=refused)


def _author_accounts(*, organisation: Organisation, events: Sequence[dict]) -> dict:
    """The account id of each author label that names an account holder of the organisation."""
    names = {event.get("author") or "" for event in events} - {""}
    # Authors are named as the places' people are: a handle or a username of a person record.
    found = people_by_name(organisation=organisation, names=names)
    return {name: membership.user_id for name, membership in found.items()}


def _thread_locked(*, organisation: Organisation, external_id: str) -> Thread:
    """The thread (created by its first events), locked against another ingest into it."""
    try:
        with transaction.atomic():
            thread, _ = Thread.objects.get_or_create(organisation=organisation, external_id=external_id)
    except IntegrityError:
        thread = Thread.objects.get(organisation=organisation, external_id=external_id)
    # Two ingests into one thread at once would hand out the same sequence numbers.
    # NO KEY UPDATE: the thread's key never changes, so inserts that reference the
    # thread (events, learnings) are not blocked by this lock (docs/reliability.md).
    return Thread.objects.select_for_update(no_key=True).get(pk=thread.pk)


def _new_events(
    *,
    organisation: Organisation,
    thread: Thread,
    agent: Agent,
    events: Sequence[dict],
    places: Sequence[PlaceInTurn | RefusedEvent],
    accounts: dict,
) -> tuple[list[ThreadEvent], list[IngestedEvent]]:
    """Rows for the events not stored yet and not refused, numbered on from the thread's last sequence,
    and what became of each: an id already stored, or given twice in this call, is a duplicate."""
    given = [event.get("id") or "" for event in events]
    stored = set(
        ThreadEvent.objects.filter(
            organisation=organisation, thread=thread, external_id__in=[i for i in given if i]
        ).values_list("external_id", flat=True)
    )
    sequence = thread.last_sequence
    rows, outcome, seen = [], [], set()
    for index, (event, resolved, external_id) in enumerate(zip(events, places, given, strict=True)):
        if isinstance(resolved, RefusedEvent):
            continue
        if external_id and (external_id in stored or external_id in seen):
            outcome.append(IngestedEvent(index=index, sequence=0, external_id=external_id, duplicate=True))
            continue
        seen.add(external_id)
        sequence += 1
        author = (event.get("author") or "").strip()
        rows.append(
            ThreadEvent(
                organisation=organisation,
                thread=thread,
                sequence=sequence,
                external_id=external_id,
                role=event["role"],
                author=author,
                author_user_id=accounts.get(author),
                agent=agent,
                text=event["text"],
                occurred_at=event["time"],
                place_channel=resolved.place.channel,
                place_kind=resolved.place.kind,
                place_people=list(resolved.place.people),
            )
        )
        outcome.append(IngestedEvent(index=index, sequence=sequence, external_id=external_id, duplicate=False))
    return rows, outcome
