"""Subject requests: everything held about one subject, as an export, and its erasure.

A subject is a `candidate` (named by whatever id the organisation uses) or a
`user` (an account, named by its id). For a user, "everything held about
them" is every row whose subject they are and every row in their person
scope, whatever its subject says.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.erasure import person_display_name_erase
from accounts.models import Agent, Organisation, User
from memories.api.serializers import MemoryOutputSerializer
from memories.db.locks import memories_rewrite_lock
from memories.models import (
    ERASED_PROVENANCE,
    Injection,
    InjectionLine,
    Memory,
    MemoryAudit,
    Scope,
    SubjectType,
)
from memories.selectors import in_a_dm_with
from memories.services import memory_redact
from memories.signals import erase_derived, export_derived


def _about(*, organisation: Organisation, subject_type: str, subject_id: str) -> QuerySet[Memory]:
    about = Q(subject_type=subject_type, subject_id=subject_id)
    if subject_type == SubjectType.USER:
        about |= Q(scope=Scope.PERSON, scope_ref=subject_id)
    return Memory.objects.filter(organisation=organisation).filter(about)


def subject_export(*, organisation: Organisation, subject_type: str, subject_id: str) -> list[Memory]:
    """Every row held about the subject, oldest first, erasure receipts included (they say what was removed)."""
    if subject_type not in (SubjectType.CANDIDATE, SubjectType.USER) or not subject_id:
        return []
    return list(
        _about(organisation=organisation, subject_type=subject_type, subject_id=subject_id)
        .select_related("agent", "written_by")
        .order_by("created_at", "id")
    )


def subject_export_document(*, organisation: Organisation, subject_type: str, subject_id: str, now) -> dict:
    """The subject-access export: every row held about the subject, and everything erasure would reach
    beyond them (the thread events they wrote, their DMs alone, the events that taught their memories)."""
    rows = subject_export(organisation=organisation, subject_type=subject_type, subject_id=subject_id)
    derived = export_derived(
        organisation=organisation,
        subject_type=subject_type,
        subject_id=subject_id,
        memory_ids=[str(row.pk) for row in rows],
    )
    return {
        "subject_type": subject_type,
        "subject_id": subject_id,
        "exported_at": now,
        "count": len(rows),
        "memories": MemoryOutputSerializer(rows, many=True, context={"now": now}).data,
        "thread_events": derived.get("thread_events", []),
    }


def _injections_showing(*, organisation: Organisation, subject_type: str, subject_id: str, memory_ids) -> Q:
    """Injections whose question may say something about or by the subject: those that showed one of
    their rows, those in a DM with them, and their own."""
    lines = InjectionLine.objects.filter(organisation=organisation, memory__in=list(memory_ids))
    showed = Q(pk__in=lines.values("injection"))
    if subject_type == SubjectType.USER and subject_id:
        showed |= in_a_dm_with(organisation=organisation, person_id=subject_id) | Q(user_id=subject_id)
    return showed


def _rows_locked(*, organisation: Organisation, subject_type: str, subject_id: str) -> list[Memory]:
    """Every row about the subject, locked, oldest first."""
    # Before any row: consolidation locks memory rows in another order (memories/db/locks.py).
    memories_rewrite_lock(organisation_id=organisation.pk, exclusive=True)
    # Lock every row first: a correction landing mid-erasure would write a
    # new row about the subject that this erasure never saw.
    return list(
        _about(organisation=organisation, subject_type=subject_type, subject_id=subject_id)
        .select_for_update(no_key=True)
        .order_by("created_at", "id")
    )


def _erased_lines(*, organisation: Organisation, memory_ids: list) -> int:
    return InjectionLine.objects.filter(
        organisation=organisation, memory__in=memory_ids, erased_at__isnull=False
    ).count()


def _erase_rows(rows: list[Memory], *, reason: str, actor, agent, now) -> tuple[int, int, int, list[dict]]:
    """Erase each row not erased yet. Returns (erased now, erased before, vectors cleared, one receipt per row)."""
    erased = already = vectors = 0
    receipts = []
    for row in rows:
        if row.redacted_at is not None:
            already += 1
        else:
            vectors += row.embedding is not None
            row = memory_redact(
                memory=row, reason=reason, actor=actor, agent=agent, action=MemoryAudit.Action.REDACT, now=now
            )
            erased += 1
        receipts.append(
            {
                "id": str(row.pk),
                "erased_at": row.redacted_at,
                "erased_by": row.redacted_by_label,
                "reason": row.redaction_reason,
            }
        )
    return erased, already, vectors, receipts


def _questions_scrub(*, organisation: Organisation, subject_type: str, subject_id: str, memory_ids: set, now) -> int:
    """Empty the question of every injection that may repeat what the subject said or what was said of them.

    Derived memories erased at this same instant (their lines emptied by the same trigger) count as the
    subject's rows here."""
    derived_ids = InjectionLine.objects.filter(organisation=organisation, erased_at=now).values_list(
        "memory", flat=True
    )
    showing = _injections_showing(
        organisation=organisation,
        subject_type=subject_type,
        subject_id=subject_id,
        memory_ids=memory_ids | {pk for pk in derived_ids if pk is not None},
    )
    return Injection.objects.filter(organisation=organisation).filter(showing).exclude(question="").update(question="")


def _provenance_scrub(*, organisation: Organisation, subject_type: str, subject_id: str, now) -> int:
    """Empty what still names or quotes the subject on the erased rows of theirs and on those this erasure
    derived: the source ref, label and run id (rows erased before provenance went with the body keep them
    until now), and the label of their person scope. Returns how many rows lost any."""
    erased = Memory.objects.filter(organisation=organisation, redacted_at__isnull=False).filter(
        Q(pk__in=_about(organisation=organisation, subject_type=subject_type, subject_id=subject_id).values("pk"))
        | Q(redacted_at=now)
    )
    sourced = erased.filter(~Q(source_ref="") | ~Q(source_label="") | ~Q(source_run_id=""))
    scrubbed = set(sourced.values_list("pk", flat=True))
    sourced.update(**dict.fromkeys(ERASED_PROVENANCE, ""), updated_at=now)
    if subject_type == SubjectType.USER:
        labelled = erased.filter(scope=Scope.PERSON, scope_ref=subject_id).exclude(scope_label="")
        scrubbed |= set(labelled.values_list("pk", flat=True))
        labelled.update(scope_label="", updated_at=now)
    return len(scrubbed)


def subject_erase(
    *,
    organisation: Organisation,
    subject_type: str,
    subject_id: str,
    actor: User | None = None,
    agent: Agent | None = None,
    reason: str = "",
) -> dict:
    """Erase everything held about a subject; one receipt per row stays.

    Returns the counts (erased now, erased before), the receipts, and what
    was done in each store (`stores`). Every injected line that showed one of
    these rows is emptied by the database in the same transaction (trigger
    `memories_scrub_injections`); apps built on memories erase what they derived
    from the subject (thread events, learned memories) through `subject_erased`.
    What names them goes last: the erased rows' provenance text, their person
    scope's label, their display name (docs/privacy.md: what goes, what stays).
    """
    reason = (reason or "").strip() or f"subject erasure request for {subject_type} {subject_id}"
    now = timezone.now()
    subject: dict[str, Any] = {"organisation": organisation, "subject_type": subject_type, "subject_id": subject_id}
    is_person = subject_type == SubjectType.USER
    with transaction.atomic():
        rows = _rows_locked(**subject)
        row_ids = [row.pk for row in rows]
        before = _erased_lines(organisation=organisation, memory_ids=row_ids)
        erased, already, vectors, receipts = _erase_rows(rows, reason=reason, actor=actor, agent=agent, now=now)
        derived = erase_derived(
            **subject, memory_ids=[str(pk) for pk in row_ids], reason=reason, actor=actor, agent=agent, now=now
        )
        scrubbed = _erased_lines(organisation=organisation, memory_ids=row_ids) - before
        # Lines of derived memories were emptied at this same instant by the same trigger.
        derived_lines = (
            InjectionLine.objects.filter(organisation=organisation, erased_at=now).exclude(memory__in=row_ids).count()
        )
        questions = _questions_scrub(**subject, memory_ids=set(row_ids), now=now)
        provenance = _provenance_scrub(**subject, now=now)
        # Last: the receivers above find what quotes the subject by the names this empties.
        names = person_display_name_erase(organisation=organisation, person_id=subject_id) if is_person else 0
    return {
        "subject_type": subject_type,
        "subject_id": subject_id,
        "erased": erased,
        "already_erased": already,
        "injection_lines_scrubbed": scrubbed,
        "receipts": receipts,
        "stores": {
            "memories": len(rows),
            "vectors": vectors + derived.get("derived_vectors_cleared", 0),
            "injection_lines": scrubbed + derived_lines,
            "thread_events": derived.get("thread_events_erased", 0),
            "derived_memories": derived.get("derived_memories_erased", 0),
            "learning_keys": derived.get("learning_keys_cleared", 0),
            "injection_questions": questions,
            "provenance": provenance,
            "names": names,
        },
    }
