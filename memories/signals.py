"""Signals memories sends so that apps built on it can act on the same change, in the same
transaction, without memories importing them."""

from __future__ import annotations

from django.dispatch import Signal

from memories.models import Memory

# Sent by a subject erasure after it has erased the subject's rows, inside its transaction.
# Keyword arguments: organisation, subject_type, subject_id, memory_ids (the rows erased,
# as strings), reason, actor, agent, now. Each receiver returns a dict of counts.
subject_erased = Signal()


def erase_derived(**kwargs) -> dict[str, int]:
    """Send `subject_erased` and add up the counts the receivers report (e.g. events, derived memories)."""
    totals: dict[str, int] = {}
    for _receiver, counts in subject_erased.send(sender=Memory, **kwargs):
        for name, count in (counts or {}).items():  # type: ignore[union-attr]  # stubs say replies are str
            totals[name] = totals.get(name, 0) + count
    return totals


# Sent by a subject-access export, so it holds everything an erasure would erase. Keyword
# arguments: organisation, subject_type, subject_id, memory_ids (the rows held about the
# subject). Each receiver returns a dict of lists, e.g. {"thread_events": [...]}.
subject_exporting = Signal()


def export_derived(**kwargs) -> dict[str, list]:
    """Send `subject_exporting` and gather what the receivers hold about the subject."""
    gathered: dict[str, list] = {}
    for _receiver, held in subject_exporting.send(sender=Memory, **kwargs):
        for name, items in (held or {}).items():  # type: ignore[union-attr]  # stubs say replies are str
            gathered.setdefault(name, []).extend(items)
    return gathered


# Sent by the write service (`memories.services`) right after it inserts rows, inside their transaction,
# by every path that writes (one row, or a batch's in one statement, where no post_save fires). Keyword
# argument: memories (the rows of bucket `user` among them, possibly none). A person's own fact gets its key
# from the receiver that owns the extractor's rules (threads.conflicts).
user_facts_remembered = Signal()
