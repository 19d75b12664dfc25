"""Episodes: what was said in a thread, kept as transcript lines (`Name: text`) that recall can find."""

# Consolidation keeps each `user` and `assistant` event as a `learned` memory in the `log` tier with source
# kind `episode` (which callers cannot send), linked to its event by `Memory.source_event`. Lines are split at
# sentence boundaries under the render clamp; each is scoped by its event's place (`scope_for`), written by
# the agent that posted it and embedded in the consolidation run itself, so a thread is recallable by meaning
# once consolidated; its vector is of its own body alone. Each records its part of its message and the message
# it is linked to (`threads.episode_parts`): context kept as a link, never copied into the body. Episodes are
# bounded per place (`ARCHIVIST_THREAD_EPISODES_PER_PLACE`): past it the oldest expire at once, each keeping
# its receipt. A rendered `<memory>` block inside an event (an agent
# echoing its own context) is stripped before anything is kept or extracted.

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from accounts.models import User
from accounts.people import people_display_names
from memories.db.predicates import current_q
from memories.models import Author, Bucket, Memory, MemoryAudit, Scope, SourceKind, SubjectType, Tier
from memories.scopes import Place, scope_for
from memories.services import memory_redact
from memories.turns.render import FENCE_CLOSE, FENCE_OPEN
from memories.writer import MemoryDraft, Writer, memories_write
from threads.episode_parts import episode_parts_write
from threads.models import Thread, ThreadEvent

EPISODE_MAX_CHARS = 500  # the render clamp: a memory is a sentence, not a document
EPISODE_ROLES = ("user", "assistant")

# A rendered block, or one cut off before its end (an agent quoting the start of its context).
_MEMORY_BLOCK = re.compile(re.escape(FENCE_OPEN) + r".*?(?:" + re.escape(FENCE_CLOSE) + r"|\Z)", re.DOTALL)
_STRAY_CLOSE = re.compile(re.escape(FENCE_CLOSE))
_GAP = re.compile(r"[ \t]*\n\s*")
# A sentence ends at . ! ? (with closing quotes or brackets) followed by space, or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+")


def strip_memory_blocks(text: str) -> str:
    """The event's text without any rendered `<memory>` block: recalled memories are never learned again."""
    if FENCE_OPEN not in text and FENCE_CLOSE not in text:
        return text
    text = _STRAY_CLOSE.sub("\n", _MEMORY_BLOCK.sub("\n", text))
    return _GAP.sub("\n", text).strip()


def _pack(pieces: Sequence[str], limit: int) -> list[str]:
    """Pieces of at most `limit` characters joined by spaces, as many to a part as fit."""
    parts, current = [], ""
    for piece in pieces:
        candidate = f"{current} {piece}" if current else piece
        if len(candidate) > limit:
            parts.append(current)
            current = piece
        else:
            current = candidate
    if current:
        parts.append(current)
    return parts


def _hard_split(text: str, limit: int) -> list[str]:
    """A sentence longer than the limit, cut at word boundaries (or anywhere, for one enormous word)."""
    chunks = [word[start : start + limit] for word in text.split() for start in range(0, len(word), limit)]
    return _pack(chunks, limit)


def split_text(text: str, limit: int = EPISODE_MAX_CHARS) -> list[str]:
    """Text in parts of at most `limit` characters, cut between sentences wherever one fits."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if sentence:
            pieces.extend([sentence] if len(sentence) <= limit else _hard_split(sentence, limit))
    return _pack(pieces, limit)


def speaker_name(event: ThreadEvent, names: dict[str, str]) -> str:
    """Who said it, as a transcript shows it: the person's name, else the label the caller gave."""
    if event.author_user_id and names.get(str(event.author_user_id)):
        return names[str(event.author_user_id)]
    return event.author or ("assistant" if event.role == "assistant" else "someone")


def episode_bodies(event: ThreadEvent, text: str, name: str) -> list[str]:
    prefix = f"{name}: "
    return [prefix + part for part in split_text(text, max(EPISODE_MAX_CHARS - len(prefix), 100))]


def organisation_keeps_episodes(organisation) -> bool:
    """The organisation's switch (`Organisation.thread_episodes`, its owners' to change), under the
    global one, `ARCHIVIST_THREAD_EPISODES`."""
    return settings.THREAD_EPISODES and organisation.thread_episodes


def episodes_enabled(thread: Thread) -> bool:
    """Both switches: the organisation's and the thread's own."""
    return thread.episodes and organisation_keeps_episodes(thread.organisation)


def episode_bound(organisation_id) -> int:
    return settings.THREAD_EPISODES_PER_PLACE


def source_ref_of(thread: Thread, event: ThreadEvent) -> str:
    return (event.external_id or f"{thread.external_id}#{event.sequence}")[:200]


@dataclass
class EpisodeDraft:
    event: ThreadEvent
    body: str


def drafts_for(events: Sequence[ThreadEvent], texts: dict[int, str]) -> list[EpisodeDraft]:
    """The episodes these events become (`texts`: each event's text with echoed blocks stripped)."""
    people = {str(e.author_user_id) for e in events if e.author_user_id}
    names = people_display_names(organisation=events[0].organisation_id, ids=people) if people else {}
    out: list[EpisodeDraft] = []
    for event in events:
        if event.role not in EPISODE_ROLES or event.agent_id is None or not texts.get(event.sequence):
            continue
        name = speaker_name(event, names)
        out.extend(EpisodeDraft(event, body) for body in episode_bodies(event, texts[event.sequence], name))
    return out


def episodes_write(
    *, thread: Thread, drafts: Sequence[EpisodeDraft], vectors: Sequence[list[float] | None], model: str, now: datetime
) -> tuple[list[str], int]:
    """Write the episodes (inside the consolidation transaction); returns their ids and how many
    older episodes the per-place bound expired."""
    if not drafts:
        return [], 0
    people = {person for draft in drafts for person in draft.event.place_people}
    usernames = (
        {str(pk): name for pk, name in User.objects.filter(pk__in=people).values_list("pk", "username")}
        if people
        else {}
    )
    # Every draft is of an agent's event (`drafts_for` skips the rest); each agent writes its own.
    by_agent: dict[object, list[int]] = {}
    for index, draft in enumerate(drafts):
        by_agent.setdefault(draft.event.agent_id, []).append(index)
    rows: dict[int, Memory] = {}
    for indexes in by_agent.values():
        written = memories_write(
            [_episode(thread, drafts[index], usernames=usernames) for index in indexes],
            writer=Writer(agent=drafts[indexes[0]].event.agent),
            now=now,
            vectors=[vectors[index] for index in indexes],
            model=model,
        )
        rows.update(zip(indexes, written, strict=True))
    ordered = [rows[index] for index in range(len(drafts))]
    episode_parts_write(thread=thread, events=[draft.event for draft in drafts], rows=ordered)
    return [str(row.pk) for row in ordered], _bound_enforce_where_written(thread, ordered, now=now)


def _episode(thread: Thread, draft: EpisodeDraft, *, usernames: dict[str, str]) -> MemoryDraft:
    """One episode, scoped by its event's place; its subject is the author when a person wrote it, else what
    the scope implies."""
    event = draft.event
    place = Place(channel=event.place_channel, kind=event.place_kind, people=tuple(str(p) for p in event.place_people))
    choice = scope_for(place, None)
    if event.author_user_id:
        subject = (SubjectType.USER, str(event.author_user_id))
    elif choice.scope == Scope.PERSON:
        subject = (SubjectType.USER, choice.ref)
    else:
        subject = (SubjectType.WORKSPACE, "")
    label = ""
    if choice.scope == Scope.CHANNEL:
        label = place.channel
    elif choice.scope == Scope.PERSON:
        label = usernames.get(choice.ref, "")
    return MemoryDraft(
        organisation=thread.organisation,
        bucket=Bucket.LEARNED,
        author=Author.MODEL,
        body=draft.body,
        subject_type=subject[0],
        subject_id=subject[1],
        scope=choice.scope,
        scope_ref=choice.ref,
        scope_label=label[:200],
        source_kind=SourceKind.EPISODE,
        source_ref=source_ref_of(thread, event),
        source_label=f"thread {thread.external_id}"[:200],
        source_event=event,
        tier=Tier.LOG,
        occurred_at=event.occurred_at,
    )


def _bound_enforce_where_written(thread: Thread, rows: Sequence[Memory], *, now: datetime) -> int:
    """The per-place bound, in each place the episodes went to; the thread counts what it expired."""
    places = {(row.scope, row.scope_ref) for row in rows}
    expired = sum(
        episodes_bound_enforce(organisation_id=thread.organisation_id, scope=scope, scope_ref=ref, now=now)
        for scope, ref in places
    )
    if expired:
        Thread.objects.filter(pk=thread.pk).update(episodes_expired=thread.episodes_expired + expired)
        thread.episodes_expired += expired
    return expired


def live_episodes(*, organisation_id, now: datetime):
    return Memory.objects.filter(
        current_q(),
        organisation_id=organisation_id,
        source_kind=SourceKind.EPISODE,
        expires_at__gt=now,
    )


def episodes_bound_enforce(*, organisation_id, scope: str, scope_ref: str, now: datetime) -> int:
    """Expire the oldest live episodes of one place beyond its bound; each keeps its receipt."""
    bound = episode_bound(organisation_id)
    here = live_episodes(organisation_id=organisation_id, now=now).filter(scope=scope, scope_ref=scope_ref)
    excess = here.count() - bound
    if excess <= 0:
        return 0
    oldest = list(
        here.order_by("occurred_at", "created_at", "id").values_list("pk", flat=True)[:excess]
    )  # occurred_at is always set on an episode
    reason = f"expired: more than {bound} episodes in this place; the oldest go first"
    # Emptied as the nightly purge empties an expired row, through the same audited path: body and
    # vector go, the row and a `purge` audit entry stay as the receipt.
    for memory in Memory.objects.filter(pk__in=oldest).order_by("occurred_at", "created_at", "id"):
        memory_redact(memory=memory, reason=reason, action=MemoryAudit.Action.PURGE, now=now)
    return len(oldest)
