"""Reads for the account holders' pages: search and filters over the memories a person may see.

Who may see what is not decided here: every function takes the queryset that
`memories.selectors.memories_visible_to` returned and only narrows or orders it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.core.paginator import Page, Paginator
from django.db.models import F, Q, QuerySet

from memories.models import Bucket, Memory
from memories.selectors import memory_injections

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
    rows = memories.filter(superseded_by__isnull=True, redacted_at__isnull=True).exclude(bucket=Bucket.SYSTEM)
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
            from pgvector.django import CosineDistance

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
