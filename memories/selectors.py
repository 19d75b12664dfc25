"""Reads from the memory store."""

from __future__ import annotations

from memories.models import Memory


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
