"""Reads from the memory store."""

from __future__ import annotations

import logging

from django.db.models import Q, QuerySet

from accounts.models import Membership, Organisation
from memories.db.predicates import audience_q, held_or_shared_q, times_in_range_q
from memories.models import Bucket, Channel, ChannelMember, InjectionLine, Memory, Scope
from memories.scopes import Place, Viewer

logger = logging.getLogger(__name__)
# How many unreadable rows one read names in its log line: enough to find them, bounded for a flood.
UNREADABLE_LOGGED = 20


def readable_only(rows: QuerySet[Memory], *, read: str) -> QuerySet[Memory]:
    """`rows` but those whose times are past the write rules' bound, each logged by id.

    Such a row can exist only if written around the database's CHECK (`memories_times_in_range`); loading it
    would fail (a year before 1 or after 9999 has no Python datetime), so one row would take every read of
    its place down. It is skipped and named for an operator instead.
    """
    unreadable = list(rows.exclude(times_in_range_q()).values_list("pk", flat=True)[:UNREADABLE_LOGGED])
    if unreadable:
        logger.error(
            "%s skipped memories with a time outside 1900-2999 UTC; fix or quarantine them: %s",
            read,
            ", ".join(str(pk) for pk in unreadable),
        )
    return rows.filter(times_in_range_q())


def memory_supersede_chain(*, memory: Memory) -> list[Memory]:
    """Every version of a memory, oldest to newest, within its organisation.

    Walks back through the rows that point at this one and forward through
    `superseded_by`, one query per step; chains are a handful of rows long.
    """
    base = Memory.objects.filter(organisation_id=memory.organisation_id)
    older: list[Memory] = []
    current = memory
    seen = {memory.pk}
    while True:
        previous = base.filter(superseded_by_id=current.pk).first()
        if previous is None or previous.pk in seen:
            break
        older.append(previous)
        seen.add(previous.pk)
        current = previous
    newer: list[Memory] = []
    current = memory
    while current.superseded_by_id is not None and current.superseded_by_id not in seen:
        current = base.get(pk=current.superseded_by_id)
        newer.append(current)
        seen.add(current.pk)
    return list(reversed(older)) + [memory] + newer


def readable_channels(*, organisation, user) -> QuerySet[Channel]:
    """The channels whose facts a person may see: those whose record lists them, and every public channel."""
    mine = ChannelMember.objects.filter(organisation=organisation, user=user).values("channel_id")
    return Channel.objects.filter(organisation=organisation).filter(Q(kind=Channel.Kind.PUBLIC) | Q(pk__in=mine))


def viewer_for(*, user, organisation, role: str | None = None) -> Viewer:
    """The scope rules' view of an account holder: their id, whether they own, and their channels."""
    if role is None:
        membership = Membership.objects.filter(user=user, organisation=organisation).first()
        role = membership.role if membership else None
    channels = readable_channels(organisation=organisation, user=user).values_list("external_id", flat=True)
    return Viewer(user_id=str(user.pk), is_owner=role == Membership.Role.OWNER, channels=frozenset(channels))


def memories_visible_to(*, viewer_user, organisation) -> QuerySet[Memory]:
    """Every row of `organisation` this person may see by the scope rules, receipts included.

    The same rule as `scopes.visible_to`, as one query: workspace facts, facts of
    channels they may read (by the place records), and facts in their person
    scope. A channel fact they saved leaves with them when they leave the channel.
    Another person's person facts are never included, not even for owners. The
    system bucket is the stewards' plane and is left out. Erased, corrected and
    expired rows are included; callers narrow as they need.
    """
    user_id = str(viewer_user.pk)
    member_channels = readable_channels(organisation=organisation, user=viewer_user).values("external_id")
    shared = Q(scope=Scope.WORKSPACE) | Q(scope=Scope.CHANNEL, scope_ref__in=member_channels)
    rows = (
        Memory.objects.filter(organisation=organisation)
        .exclude(bucket=Bucket.SYSTEM)
        .filter(shared | Q(scope=Scope.PERSON, scope_ref=user_id))
    )
    return readable_only(rows, read="list")


def memories_seen_by_agent(*, agent, organisation, place: Place) -> QuerySet[Memory]:
    """What an agent may list outside a turn: the rows it could have recalled in `place`, the place it serves,
    in every state (an erased one as its receipt). Recall's own predicates: its rows or those no agent holds,
    whose scope reaches the place (`scopes.agent_sees`, as SQL). A restricted token's place is one it may act in."""
    rows = Memory.objects.filter(organisation=organisation).filter(audience_q(place) & held_or_shared_q(agent.pk))
    return readable_only(rows, read="list")


def memory_injections(*, memory: Memory) -> QuerySet:
    """The turns a memory was injected into, newest first: turn id, when, and where in the block."""
    return (
        InjectionLine.objects.filter(organisation_id=memory.organisation_id, memory=memory)
        .select_related("injection")
        .order_by("-injection__created_at", "-injection_id")
    )


def in_a_dm_with(*, organisation: Organisation, person_id: str) -> Q:
    """Turns and thread events (both record `place_channel`, `place_kind`, `place_people`) in a DM with this
    person: as the place was recorded with them, or in a channel whose record is a DM with them now, however
    the DM was first named."""
    dms = Channel.objects.filter(organisation=organisation, kind=Channel.Kind.DM, channelmember__user_id=person_id)
    return Q(place_kind=Channel.Kind.DM, place_people__contains=[str(person_id)]) | Q(
        place_channel__in=dms.values("external_id")
    )
