"""Places are records: who is in a place is what its record says, not what a call claims."""

# A turn call names its place; `place_for_turn` reads the record (the channel with its members) and answers
# with the rules' `Place` built from it. Turn calls never change a record; only explicit writes do (`place_write`:
# `PUT /api/v1/places/{channel}` and the owners' pages), each leaving a `PlaceAudit` row. The one exception is a
# place seen for the first time, which an agent holding the directory right may create from its call, audited
# the same way.
#
# Who may act where: a signed-in person in their own DM, private channels listing them and public channels of
# their organisation (anything else is not found); an agent anywhere in its organisation, unless its token is
# restricted to listed channels (and DMs with listed people).

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, Unpack

from django.contrib.postgres.aggregates import ArrayAgg
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Coalesce

from accounts.models import Agent, AgentToken, Membership, Organisation, User, handle_or_username
from accounts.people import people_by_name, people_labels
from lib.errors import ApplicationError
from lib.hot_path import ModelColumns
from memories.models import CHANNEL_PATTERN, Channel, ChannelMember, PlaceAudit, SubjectType
from memories.scopes import Place

CHANNEL_RE = re.compile(CHANNEL_PATTERN)
MAX_PEOPLE_IN_PLACE = 500
PLACES_ENDPOINT = "PUT /api/v1/places/{channel}"


class PlaceNotFound(ApplicationError):
    """The caller may not act in this place, or it has no record: answered as 404, so nothing leaks."""

    code = "not_found"
    http_status = 404

    def __init__(self, message: str = "No place you can act in has this channel id."):
        super().__init__(message)


class PlaceConflict(ApplicationError):
    """A call that would rebind a DM (another person, or another kind) or turn a place into a DM: answered as 409."""

    code = "conflict"
    http_status = 409

    def __init__(self, field: str, message: str):
        super().__init__(message, field)


@dataclass(frozen=True)
class Member:
    id: str
    handle: str
    username: str

    @property
    def label(self) -> str:
        return handle_or_username(self.handle, self.username)

    def named_by(self, name: str) -> bool:
        return name in (self.handle, self.username, self.id)


@dataclass(frozen=True)
class PlaceRecord:
    """A channel with its members, as one read."""

    channel: Channel
    members: tuple[Member, ...]

    @property
    def member_ids(self) -> tuple[str, ...]:
        return tuple(member.id for member in self.members)

    def labels(self) -> dict[str, str]:
        return {member.id: member.label for member in self.members}


@dataclass(frozen=True)
class PlaceInTurn:
    """The place a turn happens in, from its record, and what the call said that the record overrode."""

    place: Place
    channel: Channel | None = None  # None for a place as recorded on a stored event
    labels: dict[str, str] = field(default_factory=dict)  # person id -> handle or username
    notice: str = ""

    def label_for(self, person_id: str) -> str:
        return self.labels.get(person_id, "")


def subject_names(rows: Sequence[dict], *, resolved: PlaceInTurn, organisation: Organisation) -> dict[str, str]:
    """How the user subjects of these rows (`subject_type`, `subject_id`) are named (handle, else username):
    the place's people first, the rest in one query."""
    names = dict(resolved.labels)
    wanted = {str(row["subject_id"]) for row in rows if row["subject_type"] == SubjectType.USER} - set(names)
    if wanted:
        names.update(people_labels(organisation=organisation, ids=wanted))
    return names


def subject_label(row: dict, names: dict[str, str]) -> str:
    """How a row's line names its subject: a person by `names` (from `subject_names`), a candidate by its id."""
    subject_id = str(row["subject_id"] or "")
    return names.get(subject_id, "") if row["subject_type"] == SubjectType.USER else subject_id


def channel_problem(channel: object) -> str:
    """Why `channel` cannot be a channel id, or "" when it can."""
    if not isinstance(channel, str) or not CHANNEL_RE.fullmatch(channel):
        return (
            "A channel id is 1 to 200 printable characters with no slash, no control characters "
            "and no surrounding spaces."
        )
    return ""


def place_records(*, organisation: Organisation) -> QuerySet[Channel]:
    """The organisation's channels, each annotated with its members' ids, handles and usernames (one query)."""
    present = Q(channelmember__isnull=False)
    return Channel.objects.filter(organisation=organisation).annotate(
        member_ids=ArrayAgg("channelmember__user_id", filter=present, default=Value([]), order_by="channelmember__id"),
        member_handles=ArrayAgg(
            Coalesce("channelmember__user__memberships__handle", Value("")),
            filter=present,
            default=Value([]),
            order_by="channelmember__id",
        ),
        member_usernames=ArrayAgg(
            "channelmember__user__username", filter=present, default=Value([]), order_by="channelmember__id"
        ),
    )


def _members(person_ids: Sequence, handles: Sequence, usernames: Sequence) -> tuple[Member, ...]:
    """The members of a place from its three member lists (ids, handles, usernames), in the same order."""
    return tuple(
        Member(id=str(person_id), handle=handle or "", username=username or "")
        for person_id, handle, username in zip(person_ids, handles, usernames, strict=True)
    )


def record_of(channel: Channel) -> PlaceRecord:
    """A `PlaceRecord` from a channel annotated by `place_records`."""
    annotated: Any = channel  # the member lists are annotations, which the model's type does not declare
    return PlaceRecord(
        channel=channel,
        members=_members(annotated.member_ids, annotated.member_handles, annotated.member_usernames),
    )


_CHANNEL = ModelColumns(Channel, "c")


# The hot path's place read, sent in an agent's token's round trip (`lib.hot_path`, `accounts.auth`):
# `place_records` for one channel of the tenant the token's statement set, as a string made once.
PLACE_OF_TENANT_STATEMENT = (
    f"SELECT {_CHANNEL.select}, "
    "COALESCE(array_agg(m.user_id ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL), '{}'), "
    "COALESCE(array_agg(COALESCE(ms.handle, '') ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL), '{}'), "
    "COALESCE(array_agg(u.username ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL), '{}') "
    "FROM memories_channel c "
    "LEFT JOIN memories_channelmember m ON m.channel_id = c.id "
    "LEFT JOIN accounts_user u ON u.id = m.user_id "
    "LEFT JOIN accounts_membership ms ON ms.user_id = u.id "
    "WHERE c.organisation_id = archivist_tenant() AND c.external_id = %s "
    "GROUP BY c.id"
)


def record_from_row(row: Sequence, connection) -> PlaceRecord:
    """The record a place statement's row holds."""
    return PlaceRecord(channel=_CHANNEL.build(row, 0, connection), members=_members(*row[len(_CHANNEL) :]))


@dataclass(frozen=True)
class PlaceRead:
    """A channel's record as this request already read it, with its tenant (None: the channel has no record)."""

    channel: str
    record: PlaceRecord | None


def place_record(*, organisation: Organisation, channel: str) -> PlaceRecord | None:
    """The channel's record with its members; None when it has none."""
    found = place_records(organisation=organisation).filter(external_id=channel).first()
    return record_of(found) if found is not None else None


def token_allows(token: AgentToken | None, *, channel: str, kind: str, people: Sequence[str]) -> bool:
    """Whether a token may act in this place: unrestricted, or the channel or the DM's person is listed."""
    if token is None or not token.restricted:
        return True
    if channel in token.allowed_channels:
        return True
    allowed = {str(person_id) for person_id in token.allowed_people}
    return kind == Channel.Kind.DM and len(people) == 1 and str(people[0]) in allowed


def token_may_create(token: AgentToken | None, *, channel: str, kind: str, people: Sequence[str]) -> bool:
    """Whether a token may record a new place from its call. A restricted token records a DM only with a listed
    person, whatever the channel id (a DM's facts are its person's, and recording one with someone else would
    reach their facts), and another place only in a listed channel."""
    if token is None or not token.restricted:
        return True
    if kind == Channel.Kind.DM:
        allowed = {str(person_id) for person_id in token.allowed_people}
        return len(people) == 1 and str(people[0]) in allowed
    return channel in token.allowed_channels


def person_may_use(record: PlaceRecord, user: User) -> bool:
    """A person acts only in their own DM, a private channel listing them, or a public channel."""
    kind = record.channel.kind
    if kind == Channel.Kind.PUBLIC:
        return True
    if kind == Channel.Kind.DM:
        return record.member_ids == (str(user.pk),)
    return str(user.pk) in record.member_ids


def _names(people: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(name.strip() for name in people if isinstance(name, str) and name.strip()))


def _validate(*, channel: str, kind: str, names: list[str]) -> None:
    errors: dict[str, list[str]] = {}
    problem = channel_problem(channel)
    if problem:
        errors["place.channel"] = [problem]
    if kind not in Channel.Kind.values:
        errors["place.kind"] = [f"{kind!r} is not a place kind; use one of {', '.join(Channel.Kind.values)}."]
    if len(names) > MAX_PEOPLE_IN_PLACE:
        errors["place.people"] = [f"A place names at most {MAX_PEOPLE_IN_PLACE} people."]
    if errors:
        raise ValidationError(errors)


def resolve_people(*, organisation: Organisation, names: list[str], field: str = "place.people") -> list[Membership]:
    """The people these names (handles or usernames) name, in order; refuses names of nobody here."""
    found = people_by_name(organisation=organisation, names=names)
    unknown = [name for name in names if name not in found]
    if unknown:
        # The same answer for a stranger and another organisation's person: existence does not leak.
        raise ValidationError({field: [f"Not a person of your organisation: {', '.join(sorted(unknown)[:10])}."]})
    return list({found[name].user_id: found[name] for name in names}.values())


def _difference(record: PlaceRecord, *, kind: str, names: list[str]) -> str:
    """What the call said that the record does not (empty when they agree)."""
    parts = []
    recorded = record.channel.kind
    if kind != recorded:
        parts.append(f"it is a {recorded} place (the call said {kind})")
    if recorded != Channel.Kind.PUBLIC and names:
        members = record.members
        same = len(names) == len(members) and all(any(m.named_by(name) for m in members) for name in names)
        if not same:
            listed = ", ".join(sorted(member.label for member in members)) or "nobody"
            parts.append(f"its people are {listed} (the call named {', '.join(sorted(names))})")
    if not parts:
        return ""
    return (
        f"This place's record was used, not the call: {'; '.join(parts)}. "
        f"{PLACES_ENDPOINT.format(channel=record.channel.external_id)} changes the record."
    )


def in_turn(record: PlaceRecord, notice: str = "") -> PlaceInTurn:
    channel = record.channel
    return PlaceInTurn(
        place=Place(channel=channel.external_id, kind=channel.kind, people=record.member_ids),
        channel=channel,
        labels=record.labels(),
        notice=notice,
    )


def place_for_turn(
    *,
    organisation: Organisation,
    channel: str,
    kind: str,
    people: Sequence[str] = (),
    user: User | None = None,
    agent: Agent | None = None,
    token: AgentToken | None = None,
    read: PlaceRead | None = None,
) -> PlaceInTurn:
    """The place a turn call names, from its record; never changes the record of a place that has one.

    `token` is the agent's token when the call came over the API: its
    directory right and its restriction apply. Raises `PlaceNotFound` when the caller may not act there, `PlaceConflict`
    when an agent names someone else for a bound DM, and `ValidationError`
    naming the field for a malformed place; `read`, the place as this transaction read it with the token.
    """
    if (agent is None) == (user is None):
        raise ValueError("exactly one of agent and user acts in a place")
    names = _names(people)
    _validate(channel=channel, kind=kind, names=names)
    if read is not None and read.channel == channel:
        record = read.record
    else:
        record = place_record(organisation=organisation, channel=channel)
    if record is None:
        # An agent acting through the services without a token (scripts, the suite) holds the right.
        if agent is None or (token is not None and not token.directory):
            raise PlaceNotFound(
                "No place you can act in has this channel id. An owner, or an agent holding the directory "
                f"right, records it with {PLACES_ENDPOINT.format(channel=channel)}."
            )
        person_ids = [member.user_id for member in resolve_people(organisation=organisation, names=names)]
        if kind == Channel.Kind.DM and len(person_ids) != 1:
            raise ValidationError({"place.people": ["A DM is with exactly one person; name them in place.people."]})
        if not token_may_create(token, channel=channel, kind=kind, people=[str(pk) for pk in person_ids]):
            raise PlaceNotFound()
        record, _ = place_write(
            organisation=organisation, channel=channel, kind=kind, people=person_ids, agent=agent, created_only=True
        )
        return in_turn(record)
    recorded = record.channel
    if agent is not None:
        if not token_allows(token, channel=channel, kind=recorded.kind, people=record.member_ids):
            raise PlaceNotFound()
        if recorded.kind == Channel.Kind.DM and names and not _names_the_one(record, names):
            bound = record.members[0].label if record.members else "nobody yet"
            raise PlaceConflict(
                "place.people",
                f"This DM is with {bound}; it cannot be used with anyone else. Use the DM's own channel id.",
            )
    else:
        assert user is not None  # exactly one of agent and user, checked above
        if not person_may_use(record, user) or (
            recorded.kind == Channel.Kind.DM and names and not _names_the_one(record, names)
        ):
            raise PlaceNotFound()
    return in_turn(record, _difference(record, kind=kind, names=names))


def place_to_read(*, organisation: Organisation, channel: str, token: AgentToken | None = None) -> PlaceInTurn:
    """The place an agent names to read in, by its channel id, as its record says: a read never records a
    place. `PlaceNotFound` where the token may not act; `ValidationError` naming `place` for a malformed id."""
    problem = channel_problem(channel)
    if problem:
        raise ValidationError({"place": [problem]})
    record = place_record(organisation=organisation, channel=channel)
    if record is None:
        # Not recorded yet (a turn call records it): read as a channel nobody is in, where recall would give
        # the workspace's facts and that channel id's own; never a DM, whose person no record names.
        if not token_allows(token, channel=channel, kind=Channel.Kind.PRIVATE, people=[]):
            raise PlaceNotFound()
        return PlaceInTurn(place=Place(channel=channel, kind=Channel.Kind.PRIVATE))
    if not token_allows(token, channel=channel, kind=record.channel.kind, people=record.member_ids):
        raise PlaceNotFound()
    return in_turn(record)


def _names_the_one(record: PlaceRecord, names: list[str]) -> bool:
    return len(record.members) == 1 and len(names) == 1 and record.members[0].named_by(names[0])


def place_write(
    *,
    organisation: Organisation,
    channel: str,
    kind: str,
    people: Sequence,
    actor: User | None = None,
    agent: Agent | None = None,
    created_only: bool = False,
) -> tuple[PlaceRecord, bool]:
    """Record a place's kind and its whole membership, auditing what changed. Returns (record, created).

    `people` are person ids (the record's whole audience). A DM is with exactly
    one person and stays bound to them, and stays a DM; a place's kind changes
    only between private and public (`PlaceConflict` otherwise). With
    `created_only`, a place someone created concurrently is left as they recorded it.
    """
    wanted = _checked_record(channel=channel, kind=kind, people=people)
    with transaction.atomic():
        try:
            with transaction.atomic():
                record, created = Channel.objects.get_or_create(
                    organisation=organisation, external_id=channel, defaults={"kind": kind}
                )
        except IntegrityError:
            record, created = Channel.objects.get(organisation=organisation, external_id=channel), False
        if created_only and not created:
            return _written(organisation=organisation, channel=channel), False
        # Two writers of one place would each compute the member diff; the row lock orders them.
        record = Channel.objects.select_for_update(of=("self",)).get(pk=record.pk)
        current = [
            str(person_id)
            for person_id in ChannelMember.objects.filter(organisation=organisation, channel=record)
            .order_by("id")
            .values_list("user_id", flat=True)
        ]
        if not created:
            _refuse_rebinding(record, kind=kind, wanted=wanted, current=current)
        _apply(record, created=created, kind=kind, wanted=wanted, current=current, actor=actor, agent=agent)
    return _written(organisation=organisation, channel=channel), created


# A place's kind changes only between these two: a DM's person facts are about its one member, so a DM
# that became a channel (or a channel that became a DM) would carry one person's facts to another audience.
CHANGEABLE_KINDS = frozenset({Channel.Kind.PRIVATE, Channel.Kind.PUBLIC})


def _refuse_rebinding(record: Channel, *, kind: str, wanted: list[str], current: list[str]) -> None:
    """Refuse (409) a change of a recorded place's kind other than private <-> public, and any change of a DM's
    person, whoever asks: otherwise dm -> private -> other people -> dm hands one person's DM to another."""
    if kind != record.kind and not {kind, record.kind} <= CHANGEABLE_KINDS:
        raise PlaceConflict(
            "kind",
            f"This place is {record.kind}; a place's kind changes only between private and public, and a DM stays "
            "a DM. Use a new channel id for another kind of place.",
        )
    if record.kind == Channel.Kind.DM and current != wanted:
        raise PlaceConflict(
            "people", "A DM stays with the person it was first recorded with; use a new channel id for another."
        )


def _written(*, organisation: Organisation, channel: str) -> PlaceRecord:
    """The record of a place this transaction has just written or found."""
    record = place_record(organisation=organisation, channel=channel)
    assert record is not None  # its channel row exists: it was created or fetched above
    return record


def _checked_record(*, channel: str, kind: str, people: Sequence) -> list[str]:
    """The record's whole membership as ids, once the channel, the kind and the people are known to fit."""
    problem = channel_problem(channel)
    if problem:
        raise ValidationError({"channel": [problem]})
    if kind not in Channel.Kind.values:
        raise ValidationError({"kind": [f"{kind!r} is not a place kind; use one of {', '.join(Channel.Kind.values)}."]})
    wanted = list(dict.fromkeys(str(person_id) for person_id in people))
    if kind == Channel.Kind.DM and len(wanted) != 1:
        raise ValidationError({"people": ["A DM is with exactly one person; name them."]})
    if len(wanted) > MAX_PEOPLE_IN_PLACE:
        raise ValidationError({"people": [f"A place names at most {MAX_PEOPLE_IN_PLACE} people."]})
    return wanted


def _apply(record: Channel, *, created: bool, kind: str, wanted: list[str], current: list[str], actor, agent) -> None:
    """Write the difference between the record and what is wanted, with its audit row when anything changed."""
    added = [person_id for person_id in wanted if person_id not in current]
    removed = [person_id for person_id in current if person_id not in wanted]
    kind_from = "" if created else record.kind
    changed = created or bool(added or removed) or kind_from != kind
    if not changed:
        return
    if not created:
        record.kind = kind
        record.save(update_fields=["kind", "updated_at"])
    organisation_id = record.organisation_id
    ChannelMember.objects.bulk_create(
        [ChannelMember(organisation_id=organisation_id, channel=record, user_id=person_id) for person_id in added]
    )
    if removed:
        ChannelMember.objects.filter(organisation_id=organisation_id, channel=record, user_id__in=removed).delete()
    PlaceAudit.objects.create(
        organisation_id=organisation_id,
        channel=record,
        actor=actor,
        agent=agent,
        kind_from=kind_from,
        kind_to=kind,
        added=added,
        removed=removed,
    )


class PlaceWrite(TypedDict):
    """What `place_write` is told of a place besides its organisation and people, and who writes it."""

    channel: str
    kind: str
    actor: NotRequired[User | None]
    agent: NotRequired[Agent | None]


def place_put(
    *, organisation: Organisation, people: Sequence[str], **write: Unpack[PlaceWrite]
) -> tuple[PlaceRecord, bool]:
    """An explicit write of a place named by people's handles or usernames. Returns (record, created)."""
    names = _names(people)
    if len(names) > MAX_PEOPLE_IN_PLACE:
        raise ValidationError({"people": [f"A place names at most {MAX_PEOPLE_IN_PLACE} people."]})
    members = resolve_people(organisation=organisation, names=names, field="people")
    return place_write(organisation=organisation, people=[member.user_id for member in members], **write)


def place_recorded(**fields) -> PlaceInTurn:
    """Record a place (as `place_put`) and answer with it as a turn sees it: for seeding and scripts."""
    record, _ = place_put(**fields)
    return in_turn(record)


def places_for(*, organisation: Organisation, user: User | None = None, token: AgentToken | None = None):
    """The place records a caller may use: a person's DM, private channels listing them, public channels;
    an agent's whole organisation, or its token's listed channels and DMs."""
    rows = place_records(organisation=organisation).order_by("external_id")
    if user is not None:
        mine = ChannelMember.objects.filter(organisation=organisation, user=user).values("channel_id")
        rows = rows.filter(Q(kind=Channel.Kind.PUBLIC) | Q(pk__in=mine))
        return [record for record in map(record_of, rows) if person_may_use(record, user)]
    records = list(map(record_of, rows))
    return [
        record
        for record in records
        if token_allows(token, channel=record.channel.external_id, kind=record.channel.kind, people=record.member_ids)
    ]


def member_labels(record: PlaceRecord) -> list[str]:
    return [member.label for member in record.members]
