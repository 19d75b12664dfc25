"""Changes to stored memories, each a keyword-only action in one transaction with its receipt: correct, erase,
forget, pin, point at a replacement. New rows are written by `memories.writer`."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.labels import receipt_actor_label
from accounts.models import Agent, User
from memories.models import ERASED_PROVENANCE, Author, Bucket, Memory, MemoryAudit, SourceKind
from memories.selectors import memory_supersede_chain
from memories.writer import MemoryDraft, Writer, memory_remember, receipt


def audit_record(
    *, memory: Memory, action: str, actor: User | None = None, agent: Agent | None = None, detail: dict | None = None
) -> MemoryAudit:
    audit = receipt(memory=memory, action=action, actor=actor, agent=agent, detail=detail)
    audit.save(force_insert=True)
    return audit


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
        draft, writer = _correction(old, body=body, actor=actor, agent=agent, overrides=overrides, now=now)
        # Correcting a live fact replaces it; correcting an expired one brings a fact back to life.
        live = old.expires_at is None or old.expires_at > now
        replacement = memory_remember(draft, writer=writer, now=now, replaces_live=live)
        _point_at(old, replacement, actor=actor, agent=agent, now=now)
    return replacement


def _correction(
    old: Memory, *, body: str, actor: User | None, agent: Agent | None, overrides: dict | None, now: datetime
) -> tuple[MemoryDraft, Writer]:
    """The correction of `old` and its writer: its subject, scope and bucket, and what `overrides` may change
    (tier, pinned, expiry, source)."""
    overrides = dict(overrides or {})
    is_person = agent is None
    draft = MemoryDraft(
        organisation=old.organisation,
        # A person's correction is something they said to remember; an agent's is something it learned.
        bucket=Bucket.USER if is_person else Bucket.LEARNED,
        author=Author.PERSON if is_person else Author.MODEL,
        body=body,
        source_kind=overrides.pop("source_kind", SourceKind.PERSON if is_person else old.source_kind),
        owner=old.owner or (actor if is_person else None),
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
    )
    if overrides:
        raise ValidationError({name: ["This field cannot be set on a correction."] for name in overrides})
    return draft, Writer(agent=old.agent if agent is None else agent, person=actor)


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
        row.redacted_by_label = receipt_actor_label(agent=agent, user=actor)
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
