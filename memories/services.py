"""Writes to the memory store. Each is a keyword-only action in one transaction.

The organisation, owner and writer are arguments taken from the authenticated
principal by the caller; nothing here reads them from request data.
"""

from __future__ import annotations

import functools
import logging
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Agent, Organisation, User
from lib.inserts import insert_statement, insert_where, inserted
from lib.tasks import enqueue_after_commit
from memories.db.locks import LIVE_CAP_LOCK, live_cap_lock_key
from memories.db.predicates import live_q, unexpired_q
from memories.errors import LimitReached
from memories.models import ERASED_PROVENANCE, Author, Bucket, Memory, MemoryAudit, Scope, SourceKind, SubjectType, Tier
from memories.selectors import memory_supersede_chain
from memories.signals import user_facts_remembered

logger = logging.getLogger(__name__)


def normalise_body(body: str) -> str:
    """Line endings become \\n and the ends are trimmed; nothing else changes and nothing is cut."""
    if not isinstance(body, str):
        return body
    return body.replace("\r\n", "\n").replace("\r", "\n").strip()


def default_expiry(*, tier: str, now: datetime) -> datetime:
    """Every tier keeps the ordinary expiry. A note fades from render sooner (MEMORY_NOTE_FADE_DAYS,
    judged against the render's cutoff) but stays listable, exportable and erasable until then."""
    return now + timedelta(days=settings.MEMORY_DEFAULT_TTL_DAYS)


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


@dataclass
class Together:
    """Remembers one writer makes in one transaction: the room under its cap, counted once, and the rows written.

    Passed to `memory_remember(together=...)` by the caller that writes many rows. With `insert_later`, a row
    that keeps every rule checked in Python waits in `written` and all of them are inserted in one statement
    when `remembering_together` ends (the database's triggers and CHECKs judge them then, all or none).
    """

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
        if memory.source_kind != SourceKind.EPISODE:
            self.check(frees=frees)  # episodes are not facts: they have their own bound per place
        if not self.insert_later:
            memory.save(force_insert=True)
        if memory.source_kind != SourceKind.EPISODE:
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
def remembering_together(*, organisation_id, agent: Agent | None, person: User | None, insert_later: bool = False):
    """Many remembers by one writer, kept to the rules one-by-one writes keep, at a fraction of the cost.

    The writer's cap is locked and its live facts counted once, here; each `memory_remember(together=...)`
    inside counts down from that (refused with `LimitReached` past the cap, exactly where one-by-one writes
    would stop). When the block ends, the rows kept are inserted in one statement (`insert_later`), get their
    receipts in one insert, their user-fact keys, and are queued for embedding once, after commit. Enter it
    inside the transaction that writes (the lock lasts until that ends); without `insert_later`, wrap each
    write in the yielded `savepoint()`.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("remembering_together holds its writer's cap for a transaction; enter one first.")
    capped = _capped_writer(agent=agent, person=person, bucket=Bucket.LEARNED if agent else Bucket.USER)
    if capped is None:
        raise ValueError("remembering_together needs the agent or the person who writes")
    kind, writer, limit = capped
    held = _held_facts(organisation_id=organisation_id, kind=kind, writer=writer, now=timezone.now())
    together = Together(kind=kind, writer_id=writer.pk, limit=limit, room=limit - held, insert_later=insert_later)
    yield together
    if insert_later:
        Memory.objects.bulk_create(together.written)
    _remembered(together.written)


def _remembered(memories: list[Memory]) -> None:
    """What follows rows just inserted, in their transaction: their receipts (one insert), the keys of the
    user facts among them, and one embedding task after commit."""
    if not memories:
        return
    MemoryAudit.objects.bulk_create([_remember_receipt(memory) for memory in memories])
    _receipted(memories)


def _receipted(memories: list[Memory]) -> None:
    """What follows rows inserted with their receipts: the keys of the user facts among them, and one embedding
    task after commit."""
    user_facts_remembered.send(sender=Memory, memories=[memory for memory in memories if memory.bucket == Bucket.USER])
    enqueue_embedding([memory.id for memory in memories])


def _remember_receipt(memory: Memory) -> MemoryAudit:
    return _receipt(memory=memory, action=MemoryAudit.Action.REMEMBER, actor=memory.written_by, agent=memory.agent)


def _store_statement(
    memory: Memory, *, now: datetime, frees: int
) -> tuple[str, list, tuple[str, Agent | User, int] | None]:
    """The memory and its receipt as one statement, counted against its writer's cap in it (after the cap's lock,
    sent with it): (SQL, parameters, the cap it counts against, whose lock's result then comes first). It
    answers 1 when it wrote, 0 when the cap held the write back."""
    capped = (
        None
        if memory.source_kind == SourceKind.EPISODE
        else _capped_writer(agent=memory.agent, person=memory.written_by, bucket=memory.bucket)
    )
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


def _actor_label(*, actor: User | None, agent: Agent | None) -> str:
    if agent is not None:
        return f"agent:{agent.name}"
    if actor is not None:
        return f"user:{actor.username}"
    return "system"


def audit_record(
    *, memory: Memory, action: str, actor: User | None = None, agent: Agent | None = None, detail: dict | None = None
) -> MemoryAudit:
    audit = _receipt(memory=memory, action=action, actor=actor, agent=agent, detail=detail)
    audit.save(force_insert=True)
    return audit


def _receipt(
    *, memory: Memory, action: str, actor: User | None = None, agent: Agent | None = None, detail: dict | None = None
) -> MemoryAudit:
    return MemoryAudit(
        organisation_id=memory.organisation_id,
        memory=memory,
        action=action,
        actor=actor,
        actor_label=_actor_label(actor=actor, agent=agent),
        detail=detail or {},
    )


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


def _locked(memory: Memory) -> Memory:
    """The row, re-read under a lock that holds off another writer of it (not readers, nor rows pointing at it)."""
    return Memory.objects.select_for_update(no_key=True).get(pk=memory.pk, organisation_id=memory.organisation_id)


def _point_at(old: Memory, replacement: Memory, *, actor: User | None, agent: Agent | None, now: datetime) -> None:
    old.superseded_by = replacement
    old.valid_until = now
    old.save(update_fields=["superseded_by", "valid_until", "updated_at"])
    audit_record(
        memory=old,
        action=MemoryAudit.Action.SUPERSEDE,
        actor=actor,
        agent=agent,
        detail={"replacement": str(replacement.pk)},
    )


def memory_remember(
    *,
    organisation: Organisation,
    bucket: str,
    author: str,
    body: str,
    source_kind: str,
    owner: User | None = None,
    agent: Agent | None = None,
    written_by: User | None = None,
    subject_type: str = SubjectType.WORKSPACE,
    subject_id: str = "",
    scope: str = Scope.WORKSPACE,
    scope_ref: str = "",
    scope_label: str = "",
    source_ref: str = "",
    source_label: str = "",
    source_run_id: str = "",
    tier: str = Tier.LOG,
    pinned: bool = False,
    expires_at: datetime | None = None,
    occurred_at: datetime | None = None,
    valid_from: datetime | None = None,
    system_fields: dict | None = None,
    now: datetime | None = None,
    replaces_live: bool = False,
    together: Together | None = None,
) -> Memory:
    """Store one memory after checking every rule, and queue its embedding. Every path that writes comes here, so
    the live-fact caps hold for all: `LimitReached` when the writing agent or person holds the most it may.
    `replaces_live`: correcting a live fact, which adds none; `together`: the batch (`remembering_together`)."""
    now = now or timezone.now()
    if expires_at is None and bucket != Bucket.SYSTEM:
        expires_at = default_expiry(tier=tier, now=now)
    memory = Memory(
        organisation=organisation,
        owner=owner,
        agent=agent,
        bucket=bucket,
        body=normalise_body(body),
        subject_type=subject_type,
        subject_id=(subject_id or "").strip(),
        scope=scope,
        scope_ref=scope_ref or "",
        scope_label=scope_label or "",
        author=author,
        written_by=written_by,
        source_kind=source_kind,
        source_ref=(source_ref or "").strip(),
        source_label=(source_label or "").strip(),
        source_run_id=(source_run_id or "").strip(),
        tier=tier,
        pinned=pinned,
        occurred_at=occurred_at,
        valid_from=valid_from,
        expires_at=expires_at,
        **(system_fields or {}),
    )
    _memory_store(memory, replaces_live=replaces_live, now=now, together=together)
    return memory


def _memory_store(memory: Memory, *, replaces_live: bool, now: datetime, together: Together | None) -> None:
    """Check the new row, insert it within its writer's live-fact cap with its receipt, and queue its embedding."""
    _memory_check(memory, now=now)
    frees = 1 if replaces_live else 0
    if together is not None and together.holds(memory):
        # Its savepoint (`Together.savepoint`), or the batch's one insert, holds the row and its receipt as one.
        together.keep(memory, frees=frees)
        return
    if memory.bucket == Bucket.SYSTEM:
        # A steward's receipt of a claim is allowed by a policy that reads the claim's row, which a statement
        # does not see of its own inserts: the row first, then its receipt (a claim has no cap to count).
        with transaction.atomic():
            memory.save(force_insert=True)
            _remembered([memory])
        return
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


def memory_supersede(
    *,
    memory: Memory,
    body: str,
    actor: User | None = None,
    agent: Agent | None = None,
    overrides: dict | None = None,
    now: datetime | None = None,
) -> Memory:
    """Correct a memory: write the replacement as a new row and point the old one at it.

    The replacement keeps the old row's subject, scope and bucket unless
    `overrides` changes what the rules allow (tier, pinned, expiry, source).
    """
    now = now or timezone.now()
    with transaction.atomic():
        # Two corrections of the same row at once would both pass the "is it
        # live" check; the row lock makes the second one see the first.
        old = _locked(memory)
        if old.bucket == Bucket.SYSTEM:
            raise ValidationError({"memory": ["A system claim is replaced by promotion, not corrected."]})
        if old.redacted_at is not None:
            raise ValidationError({"memory": ["An erased memory cannot be corrected."]})
        if old.superseded_by_id is not None:
            raise ValidationError({"memory": ["This memory was already corrected; correct the newest version."]})
        replacement = memory_remember(
            **_correction(old, body=body, actor=actor, agent=agent, overrides=overrides, now=now)
        )
        _point_at(old, replacement, actor=actor, agent=agent, now=now)
    return replacement


def _correction(
    old: Memory, *, body: str, actor: User | None, agent: Agent | None, overrides: dict | None, now: datetime
) -> dict:
    """What memory_remember is given to write the correction of `old`: its subject, scope and bucket,
    and what `overrides` may change (tier, pinned, expiry, source)."""
    overrides = dict(overrides or {})
    is_person = agent is None
    fields = dict(
        organisation=old.organisation,
        # A person's correction is something they said to remember; an
        # agent's is something it learned.
        bucket=Bucket.USER if is_person else Bucket.LEARNED,
        author=Author.PERSON if is_person else Author.MODEL,
        body=body,
        source_kind=overrides.pop("source_kind", SourceKind.PERSON if is_person else old.source_kind),
        owner=old.owner or (actor if is_person else None),
        agent=old.agent if agent is None else agent,
        written_by=actor,
        subject_type=old.subject_type,
        subject_id=old.subject_id,
        scope=old.scope,
        scope_ref=old.scope_ref,
        scope_label=old.scope_label,
        source_ref=overrides.pop("source_ref", f"supersedes:{old.id}"),
        source_label=overrides.pop("source_label", old.source_label),
        source_run_id=overrides.pop("source_run_id", ""),
        tier=overrides.pop("tier", old.tier),
        pinned=overrides.pop("pinned", old.pinned),
        expires_at=overrides.pop("expires_at", None),
        occurred_at=overrides.pop("occurred_at", old.occurred_at),
        valid_from=now,
        now=now,
        # Correcting a live fact replaces it; correcting an expired one brings a fact back to life.
        replaces_live=old.expires_at is None or old.expires_at > now,
    )
    if overrides:
        raise ValidationError({name: ["This field cannot be set on a correction."] for name in overrides})
    return fields


def memory_redact(
    *,
    memory: Memory,
    reason: str,
    actor: User | None = None,
    agent: Agent | None = None,
    action: str = MemoryAudit.Action.REDACT,
    now: datetime | None = None,
) -> Memory:
    """Erase a memory's content and vector, keeping a receipt: who, when and why.

    The source ref, label and run id go too: a caller's label ("DM with mona") or message id can quote or
    name whom the row was about. The source kind and the times stay.
    """
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["An erasure needs a reason for its receipt."]})
    with transaction.atomic():
        row = _locked(memory)
        if row.redacted_at is not None:
            return row  # erasing twice is a no-op; the first receipt stands
        row.body = ""
        row.embedding = None
        for name in ERASED_PROVENANCE:
            setattr(row, name, "")
        row.redacted_at = now or timezone.now()
        row.redacted_by = actor
        row.redacted_by_label = _actor_label(actor=actor, agent=agent)
        row.redaction_reason = reason[:500]
        row.save(
            update_fields=[
                "body",
                "embedding",
                *ERASED_PROVENANCE,
                "redacted_at",
                "redacted_by",
                "redacted_by_label",
                "redaction_reason",
                "updated_at",
            ]
        )
        audit_record(memory=row, action=action, actor=actor, agent=agent, detail={"reason": row.redaction_reason})
    return row


def memory_forget(
    *, memory: Memory, reason: str, actor: User | None = None, agent: Agent | None = None, now: datetime | None = None
) -> Memory:
    """Forget a memory and every version of it: each row's text and vector erased, each with its own receipt.

    A correction keeps the earlier versions as history; forgetting only the
    newest would leave what was said readable in them. Returns the row asked
    for, with `forgotten_versions` (how many rows this call erased) and
    `chain_versions` (how many versions there are) set on it.
    """
    now = now or timezone.now()
    reason = (reason or "").strip() or "forgotten on request"
    with transaction.atomic():
        chain = memory_supersede_chain(memory=memory)
        # A correction landing mid-forget would add a version this call never saw: lock them all, in one order.
        list(Memory.objects.select_for_update(no_key=True).filter(pk__in=[row.pk for row in chain]).order_by("pk"))
        chain = memory_supersede_chain(memory=memory)
        erased = 0
        for row in chain:
            if row.redacted_at is None:
                memory_redact(memory=row, reason=reason, actor=actor, agent=agent, now=now)
                erased += 1
    forgotten = Memory.objects.get(pk=memory.pk, organisation_id=memory.organisation_id)
    forgotten.forgotten_versions = erased
    forgotten.chain_versions = len(chain)
    return forgotten


def memory_set_pinned(*, memory: Memory, pinned: bool, actor: User | None = None, agent: Agent | None = None) -> Memory:
    with transaction.atomic():
        row = _locked(memory)
        if row.redacted_at is not None:
            raise ValidationError({"memory": ["An erased memory cannot be pinned."]})
        if row.pinned != pinned:
            row.pinned = pinned
            row.save(update_fields=["pinned", "updated_at"])
            audit_record(
                memory=row,
                action=MemoryAudit.Action.PIN if pinned else MemoryAudit.Action.UNPIN,
                actor=actor,
                agent=agent,
            )
    return row


def memory_point_to_replacement(
    *, memory: Memory, replacement: Memory, actor: User | None = None, now: datetime | None = None
) -> Memory:
    """Point a row at a replacement some other action wrote, such as a promotion tombstone.

    Unlike memory_supersede it writes no new row, so it works for system claims;
    the caller has already written the replacement in the same transaction.
    """
    now = now or timezone.now()
    with transaction.atomic():
        # A second writer pointing the same row elsewhere would pass the
        # "not yet superseded" check too; the lock makes it see the first.
        old = _locked(memory)
        if replacement.pk == old.pk:
            raise ValidationError({"replacement": ["A memory cannot replace itself."]})
        if replacement.organisation_id != old.organisation_id:
            raise ValidationError({"replacement": ["The replacement belongs to another organisation."]})
        if old.redacted_at is not None:
            raise ValidationError({"memory": ["An erased memory cannot be superseded."]})
        if old.superseded_by_id is not None:
            raise ValidationError({"memory": ["This memory was already superseded."]})
        _point_at(old, replacement, actor=actor, agent=None, now=now)
    return old
