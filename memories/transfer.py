"""Bringing memories out of and into an organisation: JSON lines, one remember request per line.

`memories_export` yields an organisation's live memories (and the versions they superseded, so chains are
kept as `supersedes` references), oldest first, each as the request that would remember it again: body,
place, scope, subject (a person by username), tier, pinned, dates and source. Receipts and erased rows are
left out, and so are system claims (stewards' records, not memories).

`memories_import` writes rows through the same service as the API (`memory_remember_in_place`, or
`memory_supersede` for a row that supersedes an earlier one), so every rule holds: the live-fact cap, the
scope rules, the database's constraints. Each row runs in its own savepoint; a row that breaks a rule is
reported with its line number and the rest continue. Imported rows keep their dates (`occurred_at`, from
the row's `occurred_at` or else when it was first written), carry the `import` source kind, get a fresh
expiry unless one is given, and are embedded by the workers like any other write.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from accounts.models import Agent, Membership, Organisation
from memories.errors import LimitReached
from memories.models import Bucket, Channel, Memory, Scope, SourceKind, SubjectType
from memories.places import PlaceConflict, PlaceNotFound, place_for_turn
from memories.services import memory_supersede
from memories.turns.writes import memory_remember_in_place

FORMATS = ("archivist", "mem0", "jsonl")
EXPORT_VERSION = 1
WORKSPACE_PLACE = {"channel": "workspace", "kind": "public", "people": []}
ROW_FIELDS = {
    "ref",
    "supersedes",
    "body",
    "place",
    "scope",
    "only_for",
    "subject_type",
    "subject_id",
    "tier",
    "pinned",
    "created_at",
    "occurred_at",
    "expires_at",
    "source_kind",
    "source_ref",
    "source_label",
    "author",
    "agent",
    "written_by",
}


# --- export -------------------------------------------------------------------------------


def _dm_of(organisation: Organisation, user_id: str, username: str) -> dict:
    """A person memory's place: their recorded DM when there is one, else a DM named for them."""
    channel = (
        Channel.objects.filter(organisation=organisation, kind=Channel.Kind.DM, members__pk=user_id)
        .values_list("external_id", flat=True)
        .first()
    )
    return {"channel": channel or f"dm:{username}", "kind": "dm", "people": [username]}


def memories_export(*, organisation: Organisation, now: datetime | None = None) -> Iterator[dict]:
    """The header line, then one remember request per memory, oldest first."""
    now = now or timezone.now()
    yield {"archivist_export": EXPORT_VERSION, "organisation": organisation.slug, "exported_at": now.isoformat()}
    rows = (
        Memory.objects.filter(organisation=organisation, redacted_at__isnull=True)
        .exclude(bucket=Bucket.SYSTEM)
        .filter(expires_at__gt=now)
        .select_related("agent", "written_by")
        .order_by("created_at", "id")
    )
    memberships = Membership.objects.filter(organisation=organisation).values_list("user_id", "user__username")
    usernames = {str(key): value for key, value in memberships}
    channels = {
        channel.external_id: channel
        for channel in Channel.objects.filter(organisation=organisation).prefetch_related("members")
    }
    previous = dict(
        Memory.objects.filter(organisation=organisation, superseded_by__isnull=False).values_list("superseded_by", "pk")
    )
    for memory in rows.iterator(chunk_size=500):
        if memory.scope == Scope.PERSON:
            place, scope_name = _dm_of(organisation, memory.scope_ref, usernames.get(memory.scope_ref, "")), "person"
        elif memory.scope == Scope.CHANNEL:
            channel = channels.get(memory.scope_ref)
            people = sorted(usernames.get(str(user.pk), "") for user in channel.members.all()) if channel else []
            kind = channel.kind if channel else "private"
            place, scope_name = (
                {"channel": memory.scope_ref, "kind": kind, "people": [p for p in people if p]},
                "channel",
            )
        else:
            place, scope_name = dict(WORKSPACE_PLACE), "workspace"
        subject_id = memory.subject_id
        if memory.subject_type == SubjectType.USER:
            subject_id = usernames.get(memory.subject_id, subject_id)
        supersedes = previous.get(memory.pk)
        yield {
            "ref": str(memory.pk),
            "supersedes": str(supersedes) if supersedes else None,
            "body": memory.body,
            "place": place,
            "scope": scope_name,
            "subject_type": memory.subject_type,
            "subject_id": subject_id,
            "tier": memory.tier,
            "pinned": memory.pinned,
            "created_at": memory.created_at.isoformat(),
            "occurred_at": memory.occurred_at.isoformat() if memory.occurred_at else None,
            "expires_at": memory.expires_at.isoformat() if memory.expires_at else None,
            "source_kind": memory.source_kind,
            "source_ref": memory.source_ref,
            "source_label": memory.source_label,
            "author": memory.author,
            "agent": memory.agent.name if memory.agent else None,
            "written_by": memory.written_by.username if memory.written_by else None,
        }


# --- import -------------------------------------------------------------------------------


@dataclass
class ImportReport:
    created: int = 0
    superseded: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)

    @property
    def refused(self) -> int:
        return len(self.errors)


class RowRefused(Exception):
    """A row that cannot be imported, with a sentence saying why."""


def read_lines(lines: Iterable[str]) -> Iterator[tuple[int, dict | RowRefused]]:
    """(line number, parsed object or the reason it is not one) for each non-blank line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            yield number, RowRefused(f"not JSON: {error.msg} at column {error.colno}")
            continue
        yield number, value if isinstance(value, dict) else RowRefused("a line must be a JSON object")


def mem0_rows(lines: Iterable[str]) -> Iterator[tuple[int, dict | RowRefused]]:
    """mem0's `get_all` output (`{"results": [...]}` or a list, as one document or one memory per line)."""
    text = "".join(lines)
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        yield from read_lines(text.splitlines())
        return
    items = document.get("results", document.get("memories")) if isinstance(document, dict) else document
    if isinstance(document, dict) and items is None:
        items = [document]
    for number, item in enumerate(items or [], start=1):
        yield number, item if isinstance(item, dict) else RowRefused("a mem0 memory must be an object")


def from_mem0(item: dict, *, organisation: Organisation, default_place: dict | None) -> dict:
    """A mem0 memory as a remember request: its user is a person of the organisation (a DM with them), else
    the row goes to the default place."""
    body = item.get("memory") or item.get("text") or ""
    user_id = str(item.get("user_id") or "")
    if user_id and Membership.objects.filter(organisation=organisation, user__username=user_id).exists():
        place = {"channel": f"dm:{user_id}", "kind": "dm", "people": [user_id]}
    elif default_place is not None:
        place = default_place
    else:
        raise RowRefused(
            f"user_id {user_id!r} is not a person of this organisation; pass --place CHANNEL:KIND for such rows"
        )
    ref = f"mem0:{item['id']}" if item.get("id") else ""
    return {
        "body": body,
        "place": place,
        "created_at": item.get("created_at"),
        "source_ref": ref[:200],
        "source_label": "mem0 import",
        # A person's mem0 memories are about them; the rest are the place's operational facts.
        "subject_type": "user" if place.get("kind") == "dm" else "workspace",
        "subject_id": user_id if place.get("kind") == "dm" else "",
    }


def _when(value, name: str) -> datetime | None:
    if value in (None, ""):
        return None
    parsed = parse_datetime(str(value)) if isinstance(value, str) else None
    if parsed is None:
        raise RowRefused(f"{name}: {value!r} is not an ISO 8601 date and time")
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed, UTC)


def _message(error: Exception) -> str:
    if isinstance(error, ValidationError):
        if hasattr(error, "error_dict"):
            return "; ".join(f"{name}: {' '.join(messages)}" for name, messages in error.message_dict.items())
        return " ".join(error.messages)
    return str(error)


def memories_import(
    *,
    organisation: Organisation,
    agent: Agent,
    rows: Iterable[tuple[int, dict | RowRefused]],
    format: str,
    default_place: dict | None = None,
    progress: Callable[[], object] | None = None,
) -> ImportReport:
    """Import rows written by `agent`; see the module's docstring for what holds."""
    if format not in FORMATS:
        raise ValueError(f"format is one of {', '.join(FORMATS)}")
    report = ImportReport()
    imported: dict[str, Memory] = {}  # an exported ref -> the row it became here
    for number, row in rows:
        try:
            if isinstance(row, RowRefused):
                raise row
            if format == "archivist" and "archivist_export" in row:
                continue  # the header line
            if format == "mem0":
                row = from_mem0(row, organisation=organisation, default_place=default_place)
            memory, superseded = _import_row(
                organisation=organisation, agent=agent, row=row, imported=imported, default_place=default_place
            )
        except (
            RowRefused,
            ValidationError,
            LimitReached,
            PlaceNotFound,
            PlaceConflict,
            DatabaseError,
            ValueError,
            TypeError,
            KeyError,
        ) as error:
            report.errors.append((number, _message(error)))
        else:
            if row.get("ref"):
                imported[str(row["ref"])] = memory
            report.superseded += superseded
            report.created += 1
        if progress is not None:
            progress()
    return report


def _import_row(*, organisation, agent, row: dict, imported: dict, default_place: dict | None):
    unknown = sorted(set(row) - ROW_FIELDS)
    if unknown:
        raise RowRefused(f"unknown fields {', '.join(unknown)}; a row takes {', '.join(sorted(ROW_FIELDS))}")
    body = row.get("body")
    if not isinstance(body, str) or not body.strip():
        raise RowRefused("body: a memory needs text")
    place = row.get("place") or default_place
    if not isinstance(place, dict):
        raise RowRefused("place: a row names its place ({channel, kind, people}), or pass --place")
    occurred_at = _when(row.get("occurred_at"), "occurred_at") or _when(row.get("created_at"), "created_at")
    expires_at = _when(row.get("expires_at"), "expires_at")
    if expires_at is not None and expires_at <= timezone.now():
        expires_at = None  # it had expired by the time it was exported: a fresh expiry instead
    # Each row in its own savepoint: a refusal leaves the rows before it, and the rest go on.
    with transaction.atomic():
        supersedes = row.get("supersedes")
        if supersedes:
            earlier = imported.get(str(supersedes))
            if earlier is None:
                raise RowRefused(f"supersedes {supersedes!r}, which was not imported before it")
            earlier.refresh_from_db()
            overrides = {
                "source_kind": SourceKind.IMPORT,
                "source_ref": str(row.get("source_ref") or ""),
                "source_label": str(row.get("source_label") or ""),
                "occurred_at": occurred_at,
            }
            for name in ("tier", "pinned"):
                if row.get(name) is not None:
                    overrides[name] = row[name]
            if expires_at is not None:
                overrides["expires_at"] = expires_at
            return memory_supersede(memory=earlier, body=body, agent=agent, overrides=overrides), 1
        resolved = place_for_turn(
            organisation=organisation,
            channel=str(place.get("channel", "")),
            kind=str(place.get("kind", "")),
            people=list(place.get("people") or []),
            agent=agent,
        )
        memory, _ = memory_remember_in_place(
            organisation=organisation,
            resolved=resolved,
            body=body,
            writer=agent,
            scope=row.get("scope"),
            only_for=row.get("only_for"),
            subject_type=row.get("subject_type"),
            subject_id=str(row.get("subject_id") or ""),
            tier=row.get("tier") or "log",
            pinned=bool(row.get("pinned", False)),
            expires_at=expires_at,
            source_kind=SourceKind.IMPORT,
            source_ref=str(row.get("source_ref") or ""),
            source_label=str(row.get("source_label") or ""),
            occurred_at=occurred_at,
        )
        return memory, 0


def agent_named(*, organisation: Organisation, name: str) -> Agent:
    agent = Agent.objects.filter(organisation=organisation, name=name).first()
    if agent is None:
        raise ValueError(f"No agent named {name!r} in {organisation.slug}.")
    return agent
