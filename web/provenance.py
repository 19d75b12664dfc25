"""Where a memory came from, in words a person can check: who wrote it, about whom, for whom, from what.

Pure functions over a row; nothing here decides who may see it (memories.scopes does).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from accounts.models import User
from memories.models import Author, Memory, Scope, SubjectType


def safe_source_url(ref: str) -> str | None:
    """The source as a link only when it is an absolute http(s) URL; anything else (javascript:, data:,
    relative paths) is shown as text."""
    ref = (ref or "").strip()
    if not ref or any(ch.isspace() or ord(ch) < 32 for ch in ref):
        return None
    try:
        parts = urlsplit(ref)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return ref


def why_remembered(memory: Memory, *, viewer: User) -> dict:
    """The answers to "why is this remembered", in words, for the person looking."""
    if memory.author == Author.PERSON:
        who = memory.written_by
        name = "you" if who is not None and who.pk == viewer.pk else (who.username if who else "a person")
        writer = f"Noted by a person: {name}"
    else:
        writer = f"Inferred by an agent: {memory.agent.name}" if memory.agent else "Inferred by an agent"
    if memory.subject_type == SubjectType.WORKSPACE:
        subject = "The workspace, no one in particular"
    elif memory.subject_type == SubjectType.USER and memory.subject_id == str(viewer.pk):
        subject = "You"
    else:
        subject = f"{memory.get_subject_type_display()} ({memory.subject_id})"
    if memory.scope == Scope.WORKSPACE:
        audience = "Everyone in the workspace, and its agents anywhere"
    elif memory.scope == Scope.CHANNEL:
        audience = f"People and agents in the channel {memory.scope_label or memory.scope_ref}"
    else:
        audience = "You alone, and agents only in a direct message with you"
    source_memory = None
    if memory.source_ref.startswith("supersedes:"):
        source_memory = memory.source_ref.removeprefix("supersedes:")
    return {
        "writer": writer,
        "subject": subject,
        "audience": audience,
        "source_url": safe_source_url(memory.source_ref),
        "source_memory": source_memory,
    }
