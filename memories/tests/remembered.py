"""Rows written through the writer, named by the row's own fields as tests name them."""

from __future__ import annotations

from memories.models import Memory
from memories.writer import MemoryDraft, Writer, memory_remember


def remembered(*, agent=None, written_by=None, now=None, replaces_live: bool = False, **draft) -> Memory:
    """One row by `agent` (or the person `written_by`) from a draft's fields."""
    writer = Writer(agent=agent, person=written_by)
    return memory_remember(MemoryDraft(**draft), writer=writer, now=now, replaces_live=replaces_live)
