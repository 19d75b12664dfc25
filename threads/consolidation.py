"""Consolidation: a thread's new events turned into learned memories.

Consolidation is idempotent per thread: each run takes the events past the
thread's watermark, and writes its memories and the new watermark in one
transaction, under the thread's row lock. A run that finds the watermark moved
since it read the events (another run got there first) writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone
from pgvector.django import CosineDistance

from accounts.models import Membership
from memories.db.locks import memories_rewrite_lock
from memories.db.predicates import live_q, unexpired_q
from memories.embeddings.embedders import EmbeddingError, get_embedder
from memories.errors import LimitReached
from memories.models import Bucket, Memory, SourceKind, SubjectType
from memories.places import PlaceInTurn
from memories.scopes import Place, scope_for
from memories.services import memory_point_to_replacement, memory_supersede
from memories.turns.writes import RememberRequest, memory_remember_in_place
from threads.conflicts import own_fact_for, pending_already, says_the_same, user_fact_keyed
from threads.episodes import EpisodeDraft, drafts_for, episodes_enabled, episodes_write, strip_memory_blocks
from threads.extractors.base import (
    ABOUT_AUTHOR,
    Candidate,
    EventView,
    Extractor,
    normalise,
    normalised_body_sql,
    value_signature,
)
from threads.extractors.registry import get_extractor
from threads.models import Learning, LearningSource, Thread, ThreadEvent

logger = logging.getLogger(__name__)

MAX_EVENTS_PER_BATCH = 200
CONTEXT_EVENTS = 10
NEAREST_TO_CHECK = 5
SOURCE_REF_MAX = 200


@dataclass
class ConsolidationResult:
    events: int = 0
    written: list[str] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)
    duplicates: int = 0
    skipped: int = 0
    watermark: int = 0
    capped: str = ""  # why candidates stopped being kept: the writer's live-fact cap
    episodes: list[str] = field(default_factory=list)
    episodes_expired: int = 0
    conflicts: list[str] = field(default_factory=list)

    def add(self, batch: ConsolidationResult) -> None:
        """Count one batch's outcome into the run's; the watermark is the batch's."""
        self.events += batch.events
        self.written += batch.written
        self.superseded += batch.superseded
        self.duplicates += batch.duplicates
        self.skipped += batch.skipped
        self.capped = batch.capped or self.capped
        self.episodes += batch.episodes
        self.episodes_expired += batch.episodes_expired
        self.conflicts += batch.conflicts
        self.watermark = batch.watermark


@dataclass(frozen=True)
class _Destination:
    """Where a candidate would be kept: the place it was said in, the scope and subject it gets
    there, and the live memories already about that subject in that scope."""

    resolved: PlaceInTurn
    wanted: str | None  # the scope asked of scope_for: None, the narrowest the place allows
    scope: str
    scope_ref: str
    subject: tuple[str, str]
    live: QuerySet[Memory]

    @property
    def key(self) -> tuple:
        return (self.scope, self.scope_ref, *self.subject)


def _view(event: ThreadEvent, text: str | None = None) -> EventView:
    return EventView(
        sequence=event.sequence,
        role=event.role,
        author=event.author,
        author_id=str(event.author_user_id) if event.author_user_id else None,
        text=event.text if text is None else text,
        occurred_at=event.occurred_at,
    )


def _source_ref(thread: Thread, sequences: Sequence[int]) -> str:
    ref = f"thread:{thread.pk}#" + ",".join(str(s) for s in sequences)
    if len(ref) > SOURCE_REF_MAX:
        ref = f"thread:{thread.pk}#{sequences[0]}-{sequences[-1]}"
    return ref


def _embed(bodies: list[str]) -> list[list[float] | None]:
    """Candidate vectors for the cosine check; without an embedder (or when it fails) only text decides."""
    embedder = get_embedder()
    if not bodies or not embedder.available:
        return [None] * len(bodies)
    try:
        return list(embedder.embed(bodies))
    except EmbeddingError as error:
        logger.warning("consolidation could not embed candidates (%s); duplicates are judged on text alone", error)
        return [None] * len(bodies)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))  # both are unit vectors


class _Consolidator:
    """Applies one batch's candidates inside the consolidation transaction."""

    def __init__(self, *, thread: Thread, events: dict[int, ThreadEvent], extractor: str, now: datetime):
        self.thread = thread
        self.events = events
        self.extractor = extractor
        self.now = now
        self.model = get_embedder().name
        self.threshold = settings.DEDUPE_COSINE_THRESHOLD
        self.fresh: list[tuple[tuple, list[float], str]] = []  # rows written in this batch, not yet embedded
        self.places: dict[tuple, PlaceInTurn] = {}  # a batch's candidates mostly share a few places
        self.result = ConsolidationResult()

    def place_of(self, event: ThreadEvent) -> PlaceInTurn:
        """The place as its record stood when the event was ingested (read once per place and batch)."""
        people = tuple(str(person) for person in event.place_people)
        key = (event.place_channel, event.place_kind, people)
        if key not in self.places:
            labels = {
                str(membership.user_id): membership.label
                for membership in Membership.objects.select_related("user").filter(
                    organisation_id=event.organisation_id, user_id__in=people
                )
            }
            self.places[key] = PlaceInTurn(
                place=Place(channel=event.place_channel, kind=event.place_kind, people=people), labels=labels
            )
        return self.places[key]

    def apply(self, candidate: Candidate, vector: list[float] | None) -> None:
        """Keep one candidate where its place puts it, or count why it was not kept."""
        sources = [self.events[s] for s in candidate.sequences]
        last = sources[-1]
        if last.agent_id is None:
            self.result.skipped += 1  # learned memories are held by the agent that took part
            return
        where = self.destination(candidate, last)
        # A person's own fact with this subject and key is never replaced by an inference: one
        # that says otherwise waits beside it as a pending conflict (threads.conflicts).
        own = self.own_fact_contradicted(candidate, last.author)
        if own is False:
            self.result.duplicates += 1
            return
        target = None if own is not None else self.replaced_by(candidate, where.live)
        if self.said_already(candidate, vector, where, target):
            self.result.duplicates += 1
            return
        try:
            with transaction.atomic():
                memory = self.write(candidate, last, where, target=target, own=own)
                self.learning_write(candidate, memory, sources, own=own)
        except LimitReached as error:
            # At the cap nothing more can be kept until something is forgotten; the thread's status says so.
            self.result.skipped += 1
            self.result.capped = f"Stopped at the cap: {error}"
            return
        except ValidationError as error:
            # One candidate the rules refuse (a body too long, the agent at its limit) must not
            # hold back the rest of the thread; it is logged and left out.
            logger.warning("thread %s: candidate %r not kept: %s", self.thread.pk, candidate.body[:80], error)
            self.result.skipped += 1
            return
        if vector is not None and own is None:
            self.fresh.append((where.key, vector, candidate.body))

    def destination(self, candidate: Candidate, last: ThreadEvent) -> _Destination:
        """Where the place's rules put a fact: its author's, or about no one, never in the workspace scope.

        A workspace fact reaches every prompt everywhere, and anyone who can post an event (a member, an author
        who is no person of the organisation) could write one with "remember that ..."; a fact about no one
        said in a public channel stays that channel's. An agent's explicit workspace write is another path.
        """
        resolved = self.place_of(last)
        if candidate.about == ABOUT_AUTHOR:
            assert candidate.author_id is not None  # the extractors name the author of every fact about them
            subject = (SubjectType.USER, candidate.author_id)
        else:
            subject = (SubjectType.WORKSPACE, "")
        wanted = None
        choice = scope_for(resolved.place, wanted)
        live = Memory.objects.filter(
            live_q(),
            unexpired_q(self.now),
            organisation_id=self.thread.organisation_id,
            scope=choice.scope,
            scope_ref=choice.ref,
            subject_type=subject[0],
            subject_id=subject[1],
        )
        return _Destination(resolved, wanted, choice.scope, choice.ref, subject, live)

    def said_already(self, candidate: Candidate, vector, where: _Destination, target: Memory | None) -> bool:
        """The memory it would replace says the same; or, replacing none, a live memory repeats it."""
        if target is not None:
            return normalise(target.body) == normalise(candidate.body)
        return self.repeats(candidate, vector, where.live, where.key)

    def write(
        self,
        candidate: Candidate,
        last: ThreadEvent,
        where: _Destination,
        *,
        target: Memory | None,
        own: Memory | None,
    ) -> Memory:
        """The candidate as a memory: superseding the learned memory it replaces, or new in its place."""
        ref = _source_ref(self.thread, candidate.sequences)
        label = f"thread {self.thread.external_id}"[:200]
        if target is not None:
            memory = memory_supersede(
                memory=target,
                body=candidate.body,
                agent=last.agent,
                overrides={
                    "source_kind": SourceKind.THREAD_EVENT,
                    "source_ref": ref,
                    "source_label": label,
                    "tier": candidate.tier,
                    "occurred_at": last.occurred_at,
                },
                now=self.now,
            )
            self.result.superseded.append((str(target.pk), str(memory.pk)))
            return memory
        if last.agent is None:
            raise ValueError("a learned fact is written by an agent, and the one that posted these events is gone")
        request = RememberRequest(
            body=candidate.body,
            scope=where.wanted,
            subject_type=where.subject[0],
            subject_id=where.subject[1],
            tier=candidate.tier,
            source_kind=SourceKind.THREAD_EVENT,
            source_ref=ref,
            source_label=label,
            occurred_at=last.occurred_at,
        )
        memory, _ = memory_remember_in_place(
            request, organisation=self.thread.organisation, resolved=where.resolved, writer=last.agent, now=self.now
        )
        if own is not None:
            # Written already superseded by the person's fact: not recalled, rendered or counted.
            memory_point_to_replacement(memory=memory, replacement=own, now=self.now)
            self.result.conflicts.append(str(memory.pk))
        else:
            self.result.written.append(str(memory.pk))
        return memory

    def learning_write(
        self, candidate: Candidate, memory: Memory, sources: list[ThreadEvent], *, own: Memory | None
    ) -> None:
        """What the memory was learned from: its key, the extractor, its events, and the own fact it contradicts."""
        learning = Learning.objects.create(
            organisation_id=self.thread.organisation_id,
            memory=memory,
            thread=self.thread,
            key=candidate.key[:200],
            extractor=self.extractor,
            conflict=Learning.Conflict.PENDING if own is not None else Learning.Conflict.NONE,
            conflicts_with=own,
        )
        LearningSource.objects.bulk_create(
            [
                LearningSource(organisation_id=self.thread.organisation_id, learning=learning, event=event)
                for event in sources
            ]
        )

    def own_fact_contradicted(self, candidate: Candidate, name: str):
        """The person's own fact this candidate contradicts; False when it merely repeats it (or
        the same conflict already waits); None when there is none."""
        if candidate.about != ABOUT_AUTHOR or not (candidate.exclusive or candidate.negated):
            return None
        own = own_fact_for(organisation_id=self.thread.organisation_id, candidate=candidate, now=self.now)
        if own is None:
            return None
        if says_the_same(own, candidate, name) or pending_already(own=own, candidate=candidate):
            return False
        if candidate.negated and candidate.retracts:
            keyed = user_fact_keyed(own.body, name)
            said = normalise(keyed.body if keyed else own.body)
            if normalise(candidate.retracts) not in said:
                return None  # it denies something the person's fact does not say
        return own

    def replaced_by(self, candidate: Candidate, audience) -> Memory | None:
        """The live learned memory this candidate contradicts (same key, or the family it corrects), if any."""
        learned = audience.filter(bucket=Bucket.LEARNED, learning__isnull=False).order_by("-created_at")
        if candidate.negated:
            by_key = learned.filter(learning__key=candidate.key).first()
            if by_key is not None or not candidate.retracts:
                return by_key
            needle = normalise(candidate.retracts)
            return (
                learned.annotate(normalised=RawSQL(normalised_body_sql(), ()))
                .filter(normalised__contains=needle)
                .first()
            )
        if candidate.exclusive:
            return learned.filter(learning__key=candidate.key).first()
        if candidate.correction:
            family = candidate.family
            return learned.filter(Q(learning__key=family) | Q(learning__key__startswith=f"{family}:")).first()
        return None

    def repeats(self, candidate: Candidate, vector, audience, where: tuple) -> bool:
        """Whether a live memory for the same audience and subject already says this."""
        said = audience.annotate(normalised=RawSQL(normalised_body_sql(), ()))
        if said.filter(normalised=normalise(candidate.body)).exists():
            return True
        if vector is None:
            return False
        # Cosine alone cannot tell "after 10am" from "before 10am": a repeat must also agree
        # on numbers, names and contrast words (bench/dedupe_threshold.py measured both).
        signature = value_signature(candidate.body)
        if any(
            key == where and _cosine(vector, other) >= self.threshold and value_signature(body) == signature
            for key, other, body in self.fresh
        ):
            return True
        nearest = (
            audience.filter(embedding__isnull=False, embedding_model=self.model)
            .annotate(distance=CosineDistance("embedding", vector))
            .filter(distance__lte=1 - self.threshold)
            .order_by("distance")
            .values_list("body", flat=True)[:NEAREST_TO_CHECK]
        )
        return any(value_signature(body) == signature for body in nearest)


@dataclass(frozen=True)
class _Batch:
    """One batch of a thread's events past its watermark, and what they propose to keep."""

    watermark: int
    events: list[ThreadEvent]
    live: list[ThreadEvent]  # the events not erased
    candidates: list[Candidate]
    vectors: list[list[float] | None]
    drafts: list[EpisodeDraft]
    episode_vectors: list[list[float] | None]


def thread_consolidate(
    *, thread_id: int, extractor: Extractor | None = None, now: datetime | None = None
) -> ConsolidationResult:
    """Turn the events past the thread's watermark into learned memories, batch by batch."""
    extractor = extractor or get_extractor()
    total = ConsolidationResult()
    while True:
        thread = Thread.objects.select_related("organisation").get(pk=thread_id)
        total.watermark = thread.consolidated_through
        if thread.consolidated_through >= thread.last_sequence:
            return total
        batch = _batch_read(thread, extractor)
        done = _batch_keep(thread=thread, batch=batch, extractor=extractor.name, now=now or timezone.now())
        if done is None:
            continue  # another run, or an erasure, came first: read the events again
        total.add(done)
        logger.info(
            "thread %s consolidated through %d: %d written, %d superseded, %d duplicates, %d episodes",
            thread_id,
            done.watermark,
            len(done.written),
            len(done.superseded),
            done.duplicates,
            len(done.episodes),
        )


def _batch_read(thread: Thread, extractor: Extractor) -> _Batch:
    """The next batch past the watermark, its candidates and episodes, and their vectors.

    The extractor (perhaps a remote model) and the embedder run outside the transaction;
    the watermark check in `_batch_keep` makes a slow or doubled run harmless.
    """
    watermark = thread.consolidated_through
    events = list(
        ThreadEvent.objects.filter(organisation_id=thread.organisation_id, thread=thread, sequence__gt=watermark)
        .select_related("agent")
        .order_by("sequence")[:MAX_EVENTS_PER_BATCH]
    )
    context = list(
        ThreadEvent.objects.filter(
            organisation_id=thread.organisation_id, thread=thread, sequence__lte=watermark, erased_at__isnull=True
        ).order_by("-sequence")[:CONTEXT_EVENTS]
    )[::-1]
    live = [event for event in events if event.erased_at is None]
    # An agent echoing its rendered <memory> block: the block goes before anything is kept
    # or extracted, so recalled memories are never learned again as new ones.
    texts = {event.sequence: strip_memory_blocks(event.text) for event in live}
    candidates = _extract_by_place(extractor, live, texts, context)
    drafts = drafts_for(live, texts) if episodes_enabled(thread) else []
    # One encode for the candidates' cosine check and the episodes' vectors.
    vectors = _embed([candidate.body for candidate in candidates] + [draft.body for draft in drafts])
    return _Batch(
        watermark=watermark,
        events=events,
        live=live,
        candidates=candidates,
        vectors=vectors[: len(candidates)],
        drafts=drafts,
        episode_vectors=vectors[len(candidates) :],
    )


def _place_key(event: ThreadEvent) -> tuple:
    return (event.place_channel, event.place_kind, tuple(sorted(str(person) for person in event.place_people)))


def _extract_by_place(
    extractor: Extractor, live: list[ThreadEvent], texts: dict[int, str], context: list[ThreadEvent]
) -> list[Candidate]:
    """Each place's events extracted apart, with only that place's earlier events as context.

    A learned fact has one audience: one that cites a DM and a public channel would carry the DM's words to
    wherever it is kept, and an extractor (a remote model) sent another place's events could repeat them.
    """
    places: dict[tuple, list[ThreadEvent]] = {}
    for event in live:
        if texts[event.sequence]:
            places.setdefault(_place_key(event), []).append(event)
    candidates: list[Candidate] = []
    for key, events in places.items():
        earlier = [_view(event, strip_memory_blocks(event.text)) for event in context if _place_key(event) == key]
        views = [_view(event, texts[event.sequence]) for event in events]
        candidates += extractor.extract(views, context=[view for view in earlier if view.text])
    return candidates


def _batch_keep(*, thread: Thread, batch: _Batch, extractor: str, now: datetime) -> ConsolidationResult | None:
    """Write the batch's memories and episodes and move the watermark past it, in one transaction;
    None when another run moved the watermark, or an erasure took some of the batch's words."""
    with transaction.atomic():
        # Before the thread: subject erasure locks memory rows in another order (memories/db/locks.py).
        memories_rewrite_lock(organisation_id=thread.organisation_id, exclusive=False)
        # Only the thread row: locking the organisation with it (select_related under a plain
        # FOR UPDATE) blocked every tenant insert's foreign-key check and deadlocked them.
        locked = (
            Thread.objects.select_for_update(no_key=True, of=("self",)).select_related("organisation").get(pk=thread.pk)
        )
        if locked.consolidated_through != batch.watermark:
            return None
        # An erasure that committed after the events were read (it holds the lock above
        # exclusively, so none runs now) took their words.
        live_ids = [event.pk for event in batch.live]
        if live_ids and ThreadEvent.objects.filter(pk__in=live_ids, erased_at__isnull=False).exists():
            return None
        work = _Consolidator(thread=locked, events={e.sequence: e for e in batch.events}, extractor=extractor, now=now)
        for candidate, vector in zip(batch.candidates, batch.vectors, strict=True):
            work.apply(candidate, vector)
        if batch.drafts:
            work.result.episodes, work.result.episodes_expired = episodes_write(
                thread=locked, drafts=batch.drafts, vectors=batch.episode_vectors, model=work.model, now=now
            )
        locked.consolidated_through = batch.events[-1].sequence
        locked.consolidated_at = now
        locked.consolidation_error = work.result.capped
        locked.save(update_fields=["consolidated_through", "consolidated_at", "consolidation_error", "updated_at"])
    work.result.events = len(batch.events)
    work.result.watermark = locked.consolidated_through
    return work.result


def thread_record_failure(*, thread_id: int, error: str) -> None:
    Thread.objects.filter(pk=thread_id).update(consolidation_error=error[:2000], updated_at=timezone.now())
