"""The one place memory rows are inserted: each with its receipt, within its writer's live-fact cap, its vector
written or its embedding queued."""

from __future__ import annotations

import functools
import logging
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.labels import receipt_actor_label
from accounts.models import Agent, Organisation, User
from lib.inserts import insert_statement, insert_where, inserted
from lib.tasks import enqueue_after_commit
from memories.db.locks import LIVE_CAP_LOCK, live_cap_lock_key
from memories.db.predicates import live_q, unexpired_q
from memories.embeddings.writes import vectors_write
from memories.errors import LimitReached
from memories.models import Bucket, Memory, MemoryAudit, Scope, SourceKind, SubjectType, Tier
from memories.signals import user_facts_remembered

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemoryDraft:
    """What a new row says; who writes it (its agent and person) comes from the `Writer`."""

    organisation: Organisation
    bucket: str
    author: str
    body: str
    source_kind: str
    owner: User | None = None
    subject_type: str = SubjectType.WORKSPACE
    subject_id: str = ""
    scope: str = Scope.WORKSPACE
    scope_ref: str = ""
    scope_label: str = ""
    source_ref: str = ""
    source_label: str = ""
    source_run_id: str = ""
    source_event: Any = None  # the threads.ThreadEvent an episode keeps (memories does not import threads)
    tier: str = Tier.LOG
    pinned: bool = False
    expires_at: datetime | None = None
    occurred_at: datetime | None = None
    valid_from: datetime | None = None
    system_fields: Mapping | None = None  # a system claim's own columns


@dataclass(frozen=True)
class Writer:
    """Who writes: an agent, a person (both when a person corrects an agent's fact), or neither: the worker."""

    agent: Agent | None = None
    person: User | None = None

    @classmethod
    def of(cls, who: Agent | User | None) -> Writer:
        if who is None:
            return cls()
        return cls(agent=who) if isinstance(who, Agent) else cls(person=who)


WORKER = Writer()


def receipt(
    *, memory: Memory, action: str, actor: User | None = None, agent: Agent | None = None, detail: dict | None = None
) -> MemoryAudit:
    return MemoryAudit(
        organisation_id=memory.organisation_id,
        memory=memory,
        action=action,
        actor=actor,
        actor_label=receipt_actor_label(agent=agent, user=actor),
        detail=detail or {},
    )


def normalise_body(body: str) -> str:
    """Line endings become \\n and the ends are trimmed; nothing else changes and nothing is cut."""
    if not isinstance(body, str):
        return body
    return body.replace("\r\n", "\n").replace("\r", "\n").strip()


def default_expiry(*, tier: str, now: datetime) -> datetime:
    """Every tier keeps the ordinary expiry. A note fades from render sooner (MEMORY_NOTE_FADE_DAYS,
    judged against the render's cutoff) but stays listable, exportable and erasable until then."""
    return now + timedelta(days=settings.MEMORY_DEFAULT_TTL_DAYS)


def memory_row(draft: MemoryDraft, *, writer: Writer, now: datetime) -> Memory:
    """The unsaved row a draft becomes: text normalised, provenance trimmed, the ordinary expiry by default."""
    expires_at = draft.expires_at
    if expires_at is None and draft.bucket != Bucket.SYSTEM:
        expires_at = default_expiry(tier=draft.tier, now=now)
    return Memory(
        organisation=draft.organisation,
        owner=draft.owner,
        agent=writer.agent,
        written_by=writer.person,
        bucket=draft.bucket,
        body=normalise_body(draft.body),
        subject_type=draft.subject_type,
        subject_id=(draft.subject_id or "").strip(),
        scope=draft.scope,
        scope_ref=draft.scope_ref or "",
        scope_label=draft.scope_label or "",
        author=draft.author,
        source_kind=draft.source_kind,
        source_ref=(draft.source_ref or "").strip(),
        source_label=(draft.source_label or "").strip(),
        source_run_id=(draft.source_run_id or "").strip(),
        source_event=draft.source_event,
        tier=draft.tier,
        pinned=draft.pinned,
        occurred_at=draft.occurred_at,
        valid_from=draft.valid_from,
        expires_at=expires_at,
        **(draft.system_fields or {}),
    )


# --- the live-fact caps -------------------------------------------------------------------


def live_fact_rows(*, organisation_id, now: datetime, kind: str, writer_id) -> QuerySet[Memory]:
    """Live facts an agent (`kind` agent) or a person wrote: not erased, not corrected, not expired, not system
    claims, not episodes (what was said, kept by consolidation under its own bound)."""
    rows = Memory.objects.filter(live_q(), unexpired_q(now), organisation_id=organisation_id)
    if kind == "agent":
        rows = rows.filter(agent_id=writer_id)
    else:
        rows = rows.filter(written_by_id=writer_id, agent__isnull=True)
    return rows.exclude(source_kind=SourceKind.EPISODE)


def live_facts(*, organisation_id, now: datetime, agent: Agent | None = None, person: User | None = None) -> int:
    """How many live facts an agent, or else a person, wrote (`live_fact_rows`)."""
    kind, writer = ("agent", agent) if agent is not None else ("person", person)
    assert writer is not None, "whose live facts: an agent or a person"
    return live_fact_rows(organisation_id=organisation_id, now=now, kind=kind, writer_id=writer.pk).count()


@dataclass(frozen=True)
class _Given:
    """A parameter of a statement made once that each write gives (`_held_count`)."""

    name: str


@functools.cache
def _held_count(kind: str) -> tuple[str, tuple]:
    """`live_fact_rows` counted up to a bound, as SQL compiled once per process: (SQL, its parameters, where
    a name stands for a value each write gives: organisation_id, writer_id, now, bound)."""
    given: dict[str, object] = {"organisation_id": uuid.uuid4(), "writer_id": uuid.uuid4()}
    given["now"] = now = datetime(2000, 1, 1, tzinfo=UTC)
    rows = live_fact_rows(organisation_id=given["organisation_id"], now=now, kind=kind, writer_id=given["writer_id"])
    sql, params = rows.order_by().values("pk").query.sql_with_params()
    named = {value: name for name, value in given.items()}
    if sorted(name for name in map(named.get, params) if name) != sorted(given):
        raise RuntimeError("the live-fact count does not name each of its values once")
    template = (*(_Given(named[param]) if param in named else param for param in params), _Given("bound"))
    return f"(SELECT count(*) FROM ({sql} LIMIT %s) AS held)", template


def _capped_writer(*, agent: Agent | None, person: User | None, bucket: str) -> tuple[str, Agent | User, int] | None:
    """Whose live-fact cap a write counts toward, and that cap: the agent's, else the person's; none for a system
    claim."""
    if bucket == Bucket.SYSTEM:
        return None
    if agent is not None:
        return "agent", agent, settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT
    if person is not None:
        return "person", person, settings.MEMORY_MAX_LIVE_FACTS_PER_PERSON
    return None


def _cap_of(memory: Memory) -> tuple[str, Agent | User, int] | None:
    """The cap a new row counts toward; episodes are not facts (consolidation bounds them per place)."""
    if memory.source_kind == SourceKind.EPISODE:
        return None
    return _capped_writer(agent=memory.agent, person=memory.written_by, bucket=memory.bucket)


def _held_facts(*, organisation_id, kind: str, writer: Agent | User, now: datetime) -> int:
    """Lock the writer's cap for this transaction, then count its live facts."""
    with connection.cursor() as cursor:
        cursor.execute(LIVE_CAP_LOCK, [live_cap_lock_key(kind=kind, writer_id=writer.pk)])
    return live_fact_rows(organisation_id=organisation_id, now=now, kind=kind, writer_id=writer.pk).count()


def _cap_reached(kind: str, limit: int) -> LimitReached:
    who = "This agent holds" if kind == "agent" else "You hold"
    return LimitReached(
        f"{who} {limit} live facts, the most {'an agent' if kind == 'agent' else 'a person'} may: "
        "forget before remembering."
    )


# --- after the insert ---------------------------------------------------------------------


def _remember_receipt(memory: Memory) -> MemoryAudit:
    detail = {"episode_of": memory.source_event_id} if memory.source_event_id else None
    return receipt(
        memory=memory, action=MemoryAudit.Action.REMEMBER, actor=memory.written_by, agent=memory.agent, detail=detail
    )


def _remembered(memories: list[Memory], *, embed: bool = True) -> None:
    """What follows rows just inserted, in their transaction: their receipts (one insert), then `_receipted`."""
    if not memories:
        return
    MemoryAudit.objects.bulk_create([_remember_receipt(memory) for memory in memories])
    _receipted(memories, embed=embed)


def _receipted(memories: list[Memory], *, embed: bool = True) -> None:
    """What follows rows inserted with their receipts: the keys of the user facts among them, and one embedding
    task after commit (unless the caller wrote their vectors)."""
    user_facts_remembered.send(sender=Memory, memories=[memory for memory in memories if memory.bucket == Bucket.USER])
    if embed:
        enqueue_embedding([memory.id for memory in memories])


def enqueue_embedding(memory_ids: list) -> None:
    """Ask a worker to embed these rows, after commit. A broker that is down loses nothing:
    the row is already committed and the beat sweep embeds rows that have no vector."""
    ids = [str(memory_id) for memory_id in memory_ids]
    enqueue_after_commit(
        "memories.tasks.embed_memories",
        args=[ids],
        queue="embed",
        on_broker_down=lambda error: logger.warning(
            "could not enqueue embedding for %d memories (%s); the sweep will embed them", len(ids), error
        ),
    )


# --- the checks ---------------------------------------------------------------------------


def _memory_check(memory: Memory, *, now: datetime) -> None:
    """Every rule a new row must keep, explained by field."""
    if memory.expires_at is not None and memory.expires_at <= now:
        raise ValidationError({"expires_at": ["The expiry must be in the future."]})
    # clean() explains every constraint by field and PostgreSQL enforces them,
    # so Django's per-constraint and uniqueness queries would only add round trips.
    memory.full_clean(
        exclude=["search_vector", "promoted", "embedding", *_read_relations(memory)],
        validate_unique=False,
        validate_constraints=False,
    )


def _read_relations(memory: Memory) -> list[str]:
    """Relations set to a row read from the database: it exists (and PostgreSQL's foreign key holds it),
    so Django's query asking whether it exists would only add a round trip per relation."""
    return [
        field.name
        for field in memory._meta.concrete_fields
        if isinstance(field, models.ForeignKey)
        and (related := field.get_cached_value(memory, None)) is not None
        and not related._state.adding
    ]


# --- many rows by one writer --------------------------------------------------------------


@dataclass
class Together:
    """Remembers one writer makes in one transaction: the room under its cap, counted once, and the rows written.

    With `insert_later`, checked rows wait in `written` and are inserted in one statement when
    `remembering_together` ends (the database's triggers and CHECKs judge them then, all or none)."""

    kind: str
    writer_id: object
    limit: int
    room: int
    insert_later: bool = False
    written: list[Memory] = field(default_factory=list)

    def holds(self, memory: Memory) -> bool:
        capped = _capped_writer(agent=memory.agent, person=memory.written_by, bucket=memory.bucket)
        return capped is not None and capped[0] == self.kind and capped[1].pk == self.writer_id

    def check(self, *, frees: int) -> None:
        """Refuse a write the room has no place for, as a write on its own would be (`_store_statement`)."""
        if self.room + frees <= 0:
            raise _cap_reached(self.kind, self.limit)

    def keep(self, memory: Memory, *, frees: int) -> None:
        """A checked row within the room: inserted now (or with the batch's), its receipt and embedding to come."""
        counted = _cap_of(memory) is not None
        if counted:
            self.check(frees=frees)
        if not self.insert_later:
            memory.save(force_insert=True)
        if counted:
            self.room -= 1 - frees
        self.written.append(memory)

    @contextmanager
    def savepoint(self):
        """One write's savepoint: when it rolls back, so do its room taken and its rows written."""
        room, written = self.room, len(self.written)
        try:
            with transaction.atomic():
                yield
        except BaseException:
            self.room = room
            del self.written[written:]
            raise


@contextmanager
def remembering_together(*, organisation_id, writer: Writer, insert_later: bool = False):
    """Many `memory_remember(together=...)` by one writer, kept to the rules one-by-one writes keep.

    The cap is locked and counted once, here; each write inside counts down from it. When the block ends the
    rows kept are inserted in one statement (`insert_later`), with their receipts in one more, and queued for
    embedding once. Enter it inside the writing transaction; without `insert_later`, wrap each write in the
    yielded `savepoint()`."""
    if not connection.in_atomic_block:
        raise RuntimeError("remembering_together holds its writer's cap for a transaction; enter one first.")
    bucket = Bucket.LEARNED if writer.agent else Bucket.USER
    capped = _capped_writer(agent=writer.agent, person=writer.person, bucket=bucket)
    if capped is None:
        raise ValueError("remembering_together needs the agent or the person who writes")
    kind, who, limit = capped
    held = _held_facts(organisation_id=organisation_id, kind=kind, writer=who, now=timezone.now())
    together = Together(kind=kind, writer_id=who.pk, limit=limit, room=limit - held, insert_later=insert_later)
    yield together
    if insert_later:
        Memory.objects.bulk_create(together.written)
    _remembered(together.written)


def memories_write(
    drafts: Sequence[MemoryDraft],
    *,
    writer: Writer,
    now: datetime | None = None,
    vectors: Sequence[list[float] | None] | None = None,
    model: str = "",
) -> list[Memory]:
    """Rows by one writer in one insert, their receipts in one more, within the writer's cap (locked once).
    `vectors` (one per draft, None for a row left to the workers) are written by `model` in the same
    transaction; without them the rows are queued for embedding."""
    now = now or timezone.now()
    rows = [memory_row(draft, writer=writer, now=now) for draft in drafts]
    for row in rows:
        _memory_check(row, now=now)
    with transaction.atomic():
        for (kind, who, limit), count in Counter(cap for row in rows if (cap := _cap_of(row))).items():
            held = _held_facts(organisation_id=rows[0].organisation_id, kind=kind, writer=who, now=now)
            if held + count > limit:
                raise _cap_reached(kind, limit)
        Memory.objects.bulk_create(rows)
        # With vectors given, a row without one waits for the beat sweep, as a failed embedding would.
        _remembered(rows, embed=vectors is None)
        embedded = [(row, vector) for row, vector in zip(rows, vectors or [], strict=False) if vector is not None]
        if embedded:
            vectors_write(rows=[row for row, _ in embedded], vectors=[vector for _, vector in embedded], model=model)
    return rows


# --- one row ------------------------------------------------------------------------------


def memory_remember(
    draft: MemoryDraft,
    *,
    writer: Writer,
    now: datetime | None = None,
    replaces_live: bool = False,
    together: Together | None = None,
) -> Memory:
    """Store one memory after checking every rule, and queue its embedding: `LimitReached` when the writer holds
    the most live facts it may. `replaces_live`: correcting a live fact, which adds none; `together`: the
    batch (`remembering_together`)."""
    now = now or timezone.now()
    memory = memory_row(draft, writer=writer, now=now)
    _memory_check(memory, now=now)
    frees = 1 if replaces_live else 0
    if together is not None and together.holds(memory):
        # Its savepoint (`Together.savepoint`), or the batch's one insert, holds the row and its receipt as one.
        together.keep(memory, frees=frees)
    elif memory.bucket == Bucket.SYSTEM:
        # A steward's receipt of a claim is allowed by a policy that reads the claim's row, which a statement
        # does not see of its own inserts: the row first, then its receipt (a claim has no cap to count).
        with transaction.atomic():
            memory.save(force_insert=True)
            _remembered([memory])
    else:
        _store(memory, now=now, frees=frees)
    return memory


def _store(memory: Memory, *, now: datetime, frees: int) -> None:
    """The row and its receipt in one round trip within the writer's cap, or `LimitReached`."""
    statement, params, capped = _store_statement(memory, now=now, frees=frees)
    # One round trip: the cap's lock, then the count, the row and its receipt in one statement (all or none),
    # so the caller's transaction needs no savepoint; an error after it (a receiver's) still rolls it back.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        cursor.execute(statement, params)
        if capped is not None:  # the lock's result first
            cursor.nextset()
        written = cursor.fetchone()[0]
        if written:
            inserted(memory)
            _receipted([memory])
    if not written:  # refused outside the block: nothing was written, and the caller's transaction goes on
        assert capped is not None  # only a capped write is held back
        raise _cap_reached(capped[0], capped[2])


def _store_statement(
    memory: Memory, *, now: datetime, frees: int
) -> tuple[str, list, tuple[str, Agent | User, int] | None]:
    """The memory and its receipt as one statement, counted against its writer's cap in it (after the cap's lock,
    sent with it): (SQL, parameters, the cap it counts against, whose lock's result then comes first). It
    answers 1 when it wrote, 0 when the cap held the write back."""
    capped = _cap_of(memory)
    memory_sql, memory_params = insert_statement(memory)
    receipt_sql, receipt_params = insert_statement(_remember_receipt(memory))
    lock, lock_params, room, room_params = "", [], "", []
    if capped is not None:
        kind, writer, limit = capped
        lock, lock_params = f"{LIVE_CAP_LOCK}; ", [live_cap_lock_key(kind=kind, writer_id=writer.pk)]
        # Whether the writer has room needs at most limit + frees of its live facts read, not all of them.
        held, template = _held_count(kind)
        given = {"organisation_id": memory.organisation_id, "writer_id": writer.pk, "now": now, "bound": limit + frees}
        room = f"WHERE {held} - %s < %s"
        room_params = [*(given[p.name] if isinstance(p, _Given) else p for p in template), frees, limit]
    statement = (
        f"{lock}WITH memory AS ({insert_where(memory_sql, room)} RETURNING 1), "
        f"receipt AS ({insert_where(receipt_sql, 'FROM memory')}) "
        "SELECT count(*) FROM memory"
    )
    return statement, [*lock_params, *memory_params, *room_params, *receipt_params], capped
