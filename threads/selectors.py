"""Reads for threads: what is behind its watermark, and what erasure left without a source."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db.models import F, QuerySet
from django.utils import timezone

from accounts.models import Organisation
from memories.models import Bucket, Memory
from memories.places import token_allows
from threads.episodes import episode_bound, episodes_enabled, live_episodes, organisation_keeps_episodes
from threads.models import Thread, ThreadEvent


def threads_behind(*, now: datetime | None = None, grace: timedelta = timedelta(seconds=30)) -> QuerySet[Thread]:
    """Threads with events past their watermark that the write path's own task has had time to take."""
    now = now or timezone.now()
    return Thread.objects.filter(consolidated_through__lt=F("last_sequence"), updated_at__lte=now - grace).order_by(
        "updated_at"
    )


def learned_memories_orphaned_by(*, organisation: Organisation, event_ids: Iterable[int]) -> QuerySet[Memory]:
    """Learned memories, not yet erased, that were taught by any of these events and by no event
    that still has its words: erasing the events leaves them with no source, so they go too."""
    return (
        Memory.objects.filter(
            organisation=organisation,
            bucket=Bucket.LEARNED,
            redacted_at__isnull=True,
            learning__sources__event_id__in=list(event_ids),
        )
        .exclude(learning__sources__event__erased_at__isnull=True)
        .distinct()
    )


def thread_episodes_status(*, thread: Thread, agent=None, now: datetime | None = None) -> dict:
    """Whether the thread keeps episodes, how many it holds, and what the per-place bound expired."""
    now = now or timezone.now()
    kept = live_episodes(organisation_id=thread.organisation_id, now=now).filter(source_event__thread=thread)
    if agent is not None:
        kept = kept.filter(agent=agent)
    bound = episode_bound(thread.organisation_id)
    enabled = episodes_enabled(thread)
    notices = []
    if not organisation_keeps_episodes(thread.organisation):
        notices.append("Episodes are off for this organisation (facts only)")
    elif not thread.episodes:
        notices.append("Episodes are off for this thread (facts only)")
    if thread.episodes_expired:
        notices.append(
            f"{thread.episodes_expired} older episode(s) of this thread's places expired early: a place keeps at most"
            f" {bound} episodes, the oldest going first (each keeps its receipt)"
        )
    return {
        "enabled": enabled,
        "kept": kept.count(),
        "bound_per_place": bound,
        "expired_by_bound": thread.episodes_expired,
        "notice": "; ".join(notices) + ("." if notices else ""),
    }


def thread_within_restriction(*, thread: Thread, token) -> bool:
    """Whether every event of the thread happened in a place the token may act in (always, unrestricted): a
    restricted token neither reads nor adds to a thread that reaches into places outside its restriction."""
    if token is None or not token.restricted:
        return True
    places = (
        ThreadEvent.objects.filter(organisation_id=thread.organisation_id, thread=thread)
        .values_list("place_channel", "place_kind", "place_people")
        .distinct()
    )
    return all(token_allows(token, channel=channel, kind=kind, people=people or []) for channel, kind, people in places)
