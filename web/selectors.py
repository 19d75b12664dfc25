"""Reads for the account holders' pages: search and filters over the memories a person may see.

Who may see what is not decided here: every function takes the queryset that
`memories.selectors.memories_visible_to` returned and only narrows or orders it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.core.paginator import Page, Paginator
from django.db.models import F, Prefetch, Q, QuerySet
from pgvector.django import CosineDistance

from accounts.audit import account_changes
from accounts.models import AccountAudit, Agent, AgentToken
from accounts.people import people_display_names
from memories.db.predicates import live_q, unexpired_q
from memories.models import Channel, ChannelMember, Memory, PlaceAudit, SourceKind
from memories.places import PlaceRecord
from memories.selectors import memory_injections
from threads.models import Learning, LearningSource

PAGE_SIZE = 20


class Ranking:
    NEWEST = "newest"
    WORDS = "words"
    MEANING = "meaning"


@dataclass(frozen=True)
class MemorySearch:
    """One page of results, how they were ranked, and why, when the ranking was not the one asked for."""

    page: Page
    ranking: str
    notice: str = ""


def memories_filtered(
    *,
    memories: QuerySet[Memory],
    bucket: str = "",
    scope: str = "",
    tier: str = "",
    pinned: str = "",
    expired: str = "",
    now: datetime,
) -> QuerySet[Memory]:
    """The current versions among `memories`, narrowed by the page's filters.

    Corrected versions live in their memory's history and erased ones in their
    receipts, so the list shows neither; system claims are the stewards' pages.
    """
    rows = memories.filter(live_q())
    if bucket:
        rows = rows.filter(bucket=bucket)
    if scope:
        rows = rows.filter(scope=scope)
    if tier:
        rows = rows.filter(tier=tier)
    if pinned == "yes":
        rows = rows.filter(pinned=True)
    elif pinned == "no":
        rows = rows.filter(pinned=False)
    is_expired = Q(expires_at__lte=now)
    if expired == "expired":
        rows = rows.filter(is_expired)
    elif expired != "all":
        rows = rows.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    return rows


def memory_search(
    *,
    memories: QuerySet[Memory],
    q: str = "",
    mode: str = Ranking.WORDS,
    page_number: str | int | None = 1,
    query_vector: list[float] | None = None,
    embedding_model: str = "",
    meaning_unavailable: str = "",
    page_size: int = PAGE_SIZE,
) -> MemorySearch:
    """Rank already-filtered memories by a search, or newest first (pinned on top) without one.

    `mode` "meaning" ranks by cosine distance to `query_vector`, comparing only
    vectors made by `embedding_model`; without a vector it falls back to words
    and says why (`meaning_unavailable`).
    """
    notice = ""
    if not q:
        rows = memories.order_by("-pinned", "-created_at", "-id")
        return MemorySearch(page=Paginator(rows, page_size).get_page(page_number), ranking=Ranking.NEWEST)
    if mode == Ranking.MEANING:
        if query_vector is not None:
            rows = (
                memories.filter(embedding__isnull=False, embedding_model=embedding_model)
                .annotate(distance=CosineDistance("embedding", query_vector))
                .order_by("distance", "-created_at", "-id")
            )
            not_embedded = memories.filter(Q(embedding__isnull=True) | ~Q(embedding_model=embedding_model)).count()
            if not_embedded:
                notice = (
                    f"{not_embedded} of the memories that match your filters are not embedded yet, "
                    "so a search by meaning cannot find them; a search by words can."
                )
            page = Paginator(rows, page_size).get_page(page_number)
            return MemorySearch(page=page, ranking=Ranking.MEANING, notice=notice)
        notice = f"{meaning_unavailable} These results match your words instead."
    query = SearchQuery(q, config="english", search_type="websearch")
    rows = (
        memories.filter(search_vector=query)
        .annotate(rank=SearchRank(F("search_vector"), query))
        .order_by("-rank", "-pinned", "-created_at", "-id")
    )
    return MemorySearch(page=Paginator(rows, page_size).get_page(page_number), ranking=Ranking.WORDS, notice=notice)


@dataclass(frozen=True)
class Turn:
    turn_id: str
    at: datetime


@dataclass(frozen=True)
class Usage:
    """ "Used in N turns, last on …": how many turns were given a memory, and the latest of them."""

    count: int
    last: datetime | None
    turns: list[Turn]


def memory_usage(*, memory: Memory, limit: int = 20) -> Usage:
    """How often agents were given this memory, from the injection records, newest turn first."""
    lines = memory_injections(memory=memory)
    count = lines.values("injection_id").distinct().count()
    rows = lines.values_list("injection__turn_id", "injection__created_at").distinct()[:limit]
    turns = [Turn(turn_id=turn_id, at=at) for turn_id, at in rows]
    return Usage(count=count, last=turns[0].at if turns else None, turns=turns)


def conflict_episodes(*, organisation, conflicts: list[Learning], now: datetime) -> dict[int, list[Memory]]:
    """Per pending conflict, the episodes (transcript lines) kept from the events its inference came from.

    The inference itself is not recalled (it is written already superseded by the person's fact), but these
    lines are memories like any other: live, unexpired and not quarantined, recall finds them when a
    question matches, whatever the conflict's state. Two queries however many conflicts.
    """
    learnings_of: dict[int, list[int]] = {}
    sources = LearningSource.objects.filter(organisation=organisation, learning__in=[c.pk for c in conflicts])
    for learning_id, event_id in sources.values_list("learning_id", "event_id"):
        learnings_of.setdefault(event_id, []).append(learning_id)
    episodes = (
        Memory.objects.filter(
            organisation=organisation, source_kind=SourceKind.EPISODE, source_event_id__in=list(learnings_of)
        )
        .filter(live_q(), unexpired_q(now), quarantined_at__isnull=True)
        .order_by("source_event_id", "created_at", "id")
    )
    found: dict[int, list[Memory]] = {}
    for episode in episodes:
        assert episode.source_event_id is not None  # filtered on it above
        for learning_id in learnings_of[episode.source_event_id]:
            found.setdefault(learning_id, []).append(episode)
    return found


# --- The owners' pages and "My places": records of people, places and tokens ------------------------


UNKNOWN_PERSON = "a person no longer here"


def member_names(record: PlaceRecord, names: dict[str, str]) -> list[str]:
    """A place's members as pages name them, in the record's order (`names`: `people_display_names`)."""
    return [names.get(person_id, UNKNOWN_PERSON) for person_id in record.member_ids]


@dataclass(frozen=True)
class PlaceChange:
    """One audit row of a place, with people named by their current labels."""

    channel: str
    at: datetime
    by: str
    by_owner: bool
    kind_from: str
    kind_to: str
    added: list[str]
    removed: list[str]

    @property
    def created(self) -> bool:
        return not self.kind_from


def _changes(rows, *, organisation) -> list[PlaceChange]:
    rows = list(rows)
    ids: set[str] = set()
    for row in rows:
        ids.update(map(str, row.added))
        ids.update(map(str, row.removed))
        if row.actor_id:
            ids.add(str(row.actor_id))
    labels = people_display_names(organisation=organisation, ids=ids)

    def label(person_id) -> str:
        return labels.get(str(person_id), UNKNOWN_PERSON)

    changes = []
    for row in rows:
        if row.actor_id:
            by = f"{label(row.actor_id)} (owner)"
        elif row.agent_id:
            by = f"the agent {row.agent.name}"
        else:
            by = "a script"
        changes.append(
            PlaceChange(
                channel=row.channel.external_id,
                at=row.at,
                by=by,
                by_owner=row.actor_id is not None,
                kind_from=row.kind_from,
                kind_to=row.kind_to,
                added=sorted(label(person_id) for person_id in row.added),
                removed=sorted(label(person_id) for person_id in row.removed),
            )
        )
    return changes


def place_changes(*, organisation, channel: Channel, limit: int = 50) -> list[PlaceChange]:
    """A place's audit, newest first."""
    rows = (
        PlaceAudit.objects.filter(organisation=organisation, channel=channel)
        .select_related("channel", "agent")
        .order_by("-at", "-id")[:limit]
    )
    return _changes(rows, organisation=organisation)


def owner_changes_seen_by(*, organisation, user, limit: int = 50) -> dict[str, list[PlaceChange]]:
    """Owners' changes to the places whose record lists this person, newest first, by channel id.

    Only places the person is in now: someone removed from a private place
    sees that they were removed (`removals_of`), not who else is in it.
    """
    mine = ChannelMember.objects.filter(organisation=organisation, user=user).values("channel_id")
    rows = (
        PlaceAudit.objects.filter(organisation=organisation, channel_id__in=mine, actor__isnull=False)
        .select_related("channel", "agent")
        .order_by("-at", "-id")[:limit]
    )
    by_channel: dict[str, list[PlaceChange]] = {}
    for change in _changes(rows, organisation=organisation):
        by_channel.setdefault(change.channel, []).append(change)
    return by_channel


@dataclass(frozen=True)
class AccountChange:
    """One account audit row as the owners' people page shows it: names as people are called now."""

    at: datetime
    what: str
    by: str
    whom: str


def _account_change_said(row: AccountAudit) -> str:
    if row.action == AccountAudit.Action.ROLE:
        return f"Role changed from {row.detail.get('role_from')} to {row.detail.get('role_to')}"
    if row.action == AccountAudit.Action.SWITCH:
        switch = str(row.detail.get("switch", "")).replace("_", " ").capitalize()
        return f"{switch} turned {'on' if row.detail.get('on') else 'off'}"
    return row.get_action_display()


def account_changes_shown(*, organisation, limit: int = 50) -> list[AccountChange]:
    """The organisation's account audit, newest first, naming people as they are called now."""
    rows = list(account_changes(organisation=organisation)[:limit])
    ids = {str(person_id) for row in rows for person_id in (row.actor_id, row.person_id) if person_id}
    labels = people_display_names(organisation=organisation, ids=ids)

    def by(row: AccountAudit) -> str:
        if row.actor_id:
            return labels.get(str(row.actor_id), "an operator")
        return f"the agent {row.agent.name}" if row.agent_id and row.agent else "a script"

    return [
        AccountChange(
            at=row.at,
            what=_account_change_said(row),
            by=by(row),
            whom=labels.get(str(row.person_id), UNKNOWN_PERSON) if row.person_id else "",
        )
        for row in rows
    ]


@dataclass(frozen=True)
class Removal:
    channel: str
    at: datetime
    by: str


def removals_of(*, organisation, user, limit: int = 20) -> list[Removal]:
    """Places this person was taken out of and is not in now, with who did it and when (nobody else's name)."""
    mine = ChannelMember.objects.filter(organisation=organisation, user=user).values("channel_id")
    rows = list(
        PlaceAudit.objects.filter(organisation=organisation, removed__contains=[str(user.pk)])
        .exclude(channel_id__in=mine)
        .select_related("channel", "agent")
        .order_by("-at", "-id")[:limit]
    )
    labels = people_display_names(organisation=organisation, ids={row.actor_id for row in rows if row.actor_id})
    removals = []
    for row in rows:
        if row.actor_id:
            by = f"{labels.get(str(row.actor_id), UNKNOWN_PERSON)} (owner)"
        else:
            by = f"the agent {row.agent.name}" if row.agent else "a script"
        removals.append(Removal(channel=row.channel.external_id, at=row.at, by=by))
    return removals


def agents_with_tokens(*, organisation) -> QuerySet[Agent]:
    """The organisation's agents by name, each with its tokens newest first (two queries)."""
    return (
        Agent.objects.filter(organisation=organisation)
        .order_by("name")
        .prefetch_related(Prefetch("tokens", queryset=AgentToken.objects.order_by("-created_at", "-id")))
    )
