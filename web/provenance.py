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


def people_named_by(memory: Memory) -> set[str]:
    """The ids of the people `why_remembered` names: the writer, the subject, the person a fact is kept for."""
    ids = {str(memory.written_by_id or "")}
    if memory.subject_type == SubjectType.USER:
        ids.add(memory.subject_id)
    if memory.scope == Scope.PERSON:
        ids.add(memory.scope_ref)
    return ids - {""}


def why_remembered(memory: Memory, *, viewer: User, names: dict[str, str]) -> dict:
    """The answers to "why is this remembered", in words, for the person looking.

    `names` maps the ids of `people_named_by(memory)` to how pages name them (display name, else handle or
    username); an id it lacks is a person no longer in the organisation.
    """

    def named(person_id) -> str:
        return "you" if str(person_id) == str(viewer.pk) else names.get(str(person_id), "a person no longer here")

    if memory.author == Author.PERSON:
        writer = f"Noted by a person: {named(memory.written_by_id) if memory.written_by_id else 'a person'}"
    else:
        writer = f"Inferred by an agent: {memory.agent.name}" if memory.agent else "Inferred by an agent"
    if memory.subject_type == SubjectType.WORKSPACE:
        subject = "The workspace, no one in particular"
    elif memory.subject_type == SubjectType.USER:
        subject = "You" if memory.subject_id == str(viewer.pk) else named(memory.subject_id)
    else:
        subject = f"{memory.get_subject_type_display()} ({memory.subject_id})"
    if memory.scope == Scope.WORKSPACE:
        audience = "Everyone in the workspace, and its agents anywhere"
    elif memory.scope == Scope.CHANNEL:
        audience = f"People and agents in the channel {memory.scope_label or memory.scope_ref}"
    else:
        audience = (
            "You alone, and agents only in a direct message with you"
            if memory.scope_ref == str(viewer.pk)
            else f"{named(memory.scope_ref)} alone, and agents only in a direct message with them"
        )
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
