"""Bringing memories out of and into an organisation: JSON lines, one remember request per line."""

# Export yields an organisation's live memories, and the versions they superseded (as `supersedes`
# references), oldest first, each as the request that would remember it again. Receipts, erased rows and
# system claims are left out. Version 2 names people by handle (else username) and lists them in its
# header; version 1 named them by username, which a directory person never shows.
#
# Import checks every row with the API's own input serializer, then writes it as the API does (or as a
# correction, for a row that supersedes an earlier one), so every rule holds. All or nothing, unless
# `partial`. A person an export names who is not in the importing organisation becomes a directory person
# with that handle, and is reported. Rows keep their dates, carry the `import` source kind, and get a fresh
# expiry unless one is given.

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone
from rest_framework import serializers

from accounts.models import Agent, Membership, Organisation
from accounts.people import directory_people_ensure
from lib.errors import ApplicationError
from lib.fields import StrictDateTimeField
from memories.api.serializers import RememberInputSerializer
from memories.models import Author, Bucket, Channel, Memory, Scope, SourceKind, SubjectType
from memories.places import place_for_turn
from memories.services import memory_supersede
from memories.turns.writes import RememberRequest, memory_remember_in_place

FORMATS = ("archivist", "mem0", "jsonl")
EXPORT_VERSION = 2
READABLE_EXPORT_VERSIONS = (1, 2)
WORKSPACE_PLACE = {"channel": "workspace", "kind": "public", "people": []}


# --- export -------------------------------------------------------------------------------


def dm_of(organisation: Organisation, user_id: str, label: str) -> dict:
    """A person memory's place: their recorded DM when there is one, else a DM named for them."""
    channel = (
        Channel.objects.filter(organisation=organisation, kind=Channel.Kind.DM, members__pk=user_id)
        .values_list("external_id", flat=True)
        .first()
    )
    return {"channel": channel or f"dm:{label}", "kind": "dm", "people": [label]}


def _export_header(organisation: Organisation, people, now: datetime) -> dict:
    return {
        "archivist_export": EXPORT_VERSION,
        "organisation": organisation.slug,
        "exported_at": now.isoformat(),
        # Who the rows name, so an import elsewhere can make the missing ones directory people.
        "people": {membership.label: membership.display_name for membership in people},
    }


def memories_export(*, organisation: Organisation, now: datetime | None = None) -> Iterator[dict]:
    """The header line, then one remember request per memory, oldest first."""
    now = now or timezone.now()
    memberships = (
        Membership.objects.filter(organisation=organisation).select_related("user").order_by("created_at", "id")
    )
    labels = {str(membership.user_id): membership.label for membership in memberships}
    yield _export_header(organisation, memberships, now)
    rows = (
        Memory.objects.filter(organisation=organisation, redacted_at__isnull=True)
        .exclude(bucket=Bucket.SYSTEM)
        .filter(expires_at__gt=now)
        .select_related("agent", "written_by")
        .order_by("created_at", "id")
    )
    channels = {
        channel.external_id: channel
        for channel in Channel.objects.filter(organisation=organisation).prefetch_related("members")
    }
    previous = dict(
        Memory.objects.filter(organisation=organisation, superseded_by__isnull=False).values_list("superseded_by", "pk")
    )
    for memory in rows.iterator(chunk_size=500):
        if memory.scope == Scope.PERSON:
            place, scope_name = dm_of(organisation, memory.scope_ref, labels.get(memory.scope_ref, "")), "person"
        elif memory.scope == Scope.CHANNEL:
            channel = channels.get(memory.scope_ref)
            people = sorted(labels.get(str(user.pk), "") for user in channel.members.all()) if channel else []
            kind = channel.kind if channel else "private"
            place, scope_name = (
                {"channel": memory.scope_ref, "kind": kind, "people": [p for p in people if p]},
                "channel",
            )
        else:
            place, scope_name = dict(WORKSPACE_PLACE), "workspace"
        subject_id = memory.subject_id
        if memory.subject_type == SubjectType.USER:
            subject_id = labels.get(memory.subject_id, subject_id)
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


class ImportRowSerializer(RememberInputSerializer):
    """One line of an import: a remember request exactly as the API takes it, plus the export's own fields.

    The API's serializer, not a copy of its rules: strict JSON types (`"pinned": "no"` is refused), the
    text rules, the caps on lengths and times within 1900–2999 in UTC. `author`, `agent`, `written_by`
    and `source_kind` are the export's record of the row; the importing agent writes it, with the
    `import` source kind.
    """

    identifier_fields: tuple[str, ...] = (*RememberInputSerializer.identifier_fields, "ref", "supersedes")

    ref = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    supersedes = serializers.CharField(max_length=200, required=False, allow_null=True, allow_blank=True)
    created_at = StrictDateTimeField(required=False, allow_null=True)
    occurred_at = StrictDateTimeField(required=False, allow_null=True)
    expires_at = StrictDateTimeField(required=False, allow_null=True)
    author = serializers.ChoiceField(choices=Author.choices, required=False, allow_null=True)
    agent = serializers.CharField(max_length=200, required=False, allow_null=True, allow_blank=True)
    written_by = serializers.CharField(max_length=150, required=False, allow_null=True, allow_blank=True)

    def validate_source_kind(self, value: str) -> str:
        return value  # the export's record (an episode too): the imported row carries `import`


@dataclass(frozen=True)
class Refusal:
    """Why one line of an import is refused: `line N: field: reason`."""

    line: int
    field: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.reason}"


@dataclass
class ImportReport:
    created: int = 0
    superseded: int = 0
    errors: list[Refusal] = field(default_factory=list)
    people_created: list[str] = field(default_factory=list)
    placed: Counter[str] = field(default_factory=Counter)  # "person mona", "channel C-eng": rows written there

    @property
    def refused(self) -> int:
        return len({refusal.line for refusal in self.errors})


class RowRefused(Exception):
    """A row that cannot be imported, with the field it is about and a sentence saying why."""

    def __init__(self, reason: str, field: str = "row"):
        super().__init__(reason)
        self.field = field
        self.reason = reason


class MalformedFile(Exception):
    """A file that is no import at all (not the shape its format names); nothing of it is read."""


def parse_json_text(text: str) -> object:
    """JSON text as Python, or RowRefused: a nesting too deep for the parser or a number too long is a
    refusal like any syntax error, never a traceback."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise RowRefused(f"not JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise RowRefused("not JSON this service reads: nested too deeply") from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise RowRefused(f"not JSON this service reads: {error}") from None


def read_lines(lines: Iterable[str]) -> Iterator[tuple[int, dict | RowRefused]]:
    """(line number, parsed object or the reason it is not one) for each non-blank line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = parse_json_text(line)
        except RowRefused as refusal:
            yield number, refusal
            continue
        yield number, value if isinstance(value, dict) else RowRefused("a line must be a JSON object")


def _check_header(header: dict) -> None:
    version = header.get("archivist_export")
    if version not in READABLE_EXPORT_VERSIONS:
        raise RowRefused(
            f"export format version {version!r} is not one this server reads "
            f"({', '.join(map(str, READABLE_EXPORT_VERSIONS))}); export again from a server of the same release",
            field="archivist_export",
        )


def people_named(rows: list[tuple[int, dict | RowRefused]], valid: list[tuple[int, dict]]) -> dict[str, str]:
    """Each person the valid rows name (place members, user subjects, `only_for`), with the display name the
    export's header gives them ("" when it gives none, as a version 1 header never does)."""
    header = next((row for _, row in rows if isinstance(row, dict) and "archivist_export" in row), {})
    listed = header.get("people")
    display_names: dict = listed if isinstance(listed, dict) else {}
    names: dict[str, str] = {}
    for _, attrs in valid:
        named = list(attrs["place"]["people"]) if attrs.get("place") else []
        if attrs.get("subject_type") == SubjectType.USER:
            named.append(attrs.get("subject_id", ""))
        named.append(attrs.get("only_for") or "")
        for name in filter(None, named):
            display = display_names.get(name)
            names.setdefault(name, display if isinstance(display, str) else "")
    return names


def _flattened(errors, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted field, message) for each message of a serializer's or a ValidationError's errors."""
    if isinstance(errors, dict):
        for name, value in errors.items():
            name = "row" if name in ("non_field_errors", "__all__") else str(name)
            yield from _flattened(value, f"{prefix}.{name}" if prefix else name)
    elif isinstance(errors, list):
        for item in errors:
            if isinstance(item, dict | list):
                yield from _flattened(item, prefix)
            else:
                yield prefix or "row", str(item)
    else:
        yield prefix or "row", str(errors)


def _refusals(number: int, error: Exception) -> list[Refusal]:
    if isinstance(error, ValidationError):
        detail = error.message_dict if hasattr(error, "error_dict") else error.messages
        return [Refusal(number, name, reason) for name, reason in _flattened(detail)]
    if isinstance(error, RowRefused):
        return [Refusal(number, error.field, error.reason)]
    if isinstance(error, ApplicationError):
        return [Refusal(number, error.field or "row", error.message)]
    return [Refusal(number, "row", str(error))]


def import_rows_checked(
    *, organisation: Organisation, rows: Iterable[tuple[int, dict | RowRefused]], format: str, default_place
) -> tuple[list[tuple[int, dict]], list[Refusal]]:
    """Every row checked by the API's rules before anything is written: the valid rows, and each refusal."""
    valid: list[tuple[int, dict]] = []
    refusals: list[Refusal] = []
    for number, row in rows:
        try:
            if isinstance(row, RowRefused):
                raise row
            if format == "archivist" and "archivist_export" in row:
                _check_header(row)
                continue  # the header line
        except RowRefused as refusal:
            refusals.append(Refusal(number, refusal.field, refusal.reason))
            continue
        if row.get("place") is None and default_place is not None:
            row = {**row, "place": default_place}
        serializer = ImportRowSerializer(data=row)
        if serializer.is_valid():
            valid.append((number, serializer.validated_data))
        else:
            refusals += [Refusal(number, name, reason) for name, reason in _flattened(serializer.errors)]
    return valid, refusals


def memories_import(
    *,
    organisation: Organisation,
    agent: Agent,
    rows: Iterable[tuple[int, dict | RowRefused]],
    format: str,
    default_place: dict | None = None,
    partial: bool = False,
    progress: Callable[[], object] | None = None,
) -> ImportReport:
    """Import rows written by `agent`; see the module's docstring for what holds.

    All or nothing unless `partial`: any refusal, by the rules or at write (the cap, a place), leaves the
    organisation as it was. With `partial` the valid rows are written and the refused ones reported.
    The people the rows name and the organisation lacks become directory people inside the same transaction.
    """
    if format not in FORMATS:
        raise ValueError(f"format is one of {', '.join(FORMATS)}")
    rows = list(rows)
    valid, refusals = import_rows_checked(
        organisation=organisation, rows=rows, format=format, default_place=default_place
    )
    report = ImportReport(errors=refusals)
    if refusals and not partial:
        return report
    with transaction.atomic():
        report.people_created = directory_people_ensure(
            organisation=organisation, people=people_named(rows, valid), agent=agent
        )
        imported: dict[str, Memory] = {}  # an exported ref -> the row it became here
        for number, attrs in valid:
            try:
                # Each row in its own savepoint: with `partial`, a refusal leaves the rows before it.
                with transaction.atomic():
                    memory, superseded = _import_row(
                        organisation=organisation, agent=agent, attrs=attrs, imported=imported
                    )
            except (RowRefused, ValidationError, ApplicationError, DatabaseError) as error:
                report.errors += _refusals(number, error)
            else:
                if attrs.get("ref"):
                    imported[attrs["ref"]] = memory
                report.superseded += superseded
                report.created += 1
                report.placed[f"{memory.scope} {memory.scope_label or memory.scope_ref}".strip()] += 1
            if progress is not None:
                progress()
        if report.errors and not partial:
            transaction.set_rollback(True)
            report.created = report.superseded = 0
            report.people_created = []
            report.placed.clear()
    return report


def _import_row(*, organisation, agent, attrs: dict, imported: dict) -> tuple[Memory, int]:
    occurred_at = attrs.get("occurred_at") or attrs.get("created_at")
    expires_at = attrs.get("expires_at")
    if expires_at is not None and expires_at <= timezone.now():
        expires_at = None  # it had expired by the time it was exported: a fresh expiry instead
    provenance = {
        "source_kind": SourceKind.IMPORT,
        "source_ref": attrs.get("source_ref", ""),
        "source_label": attrs.get("source_label", ""),
        "occurred_at": occurred_at,
    }
    supersedes = attrs.get("supersedes")
    if supersedes:
        earlier = imported.get(supersedes)
        if earlier is None:
            raise RowRefused(f"{supersedes!r} was not imported before this row", field="supersedes")
        earlier.refresh_from_db()
        overrides = {**provenance, "tier": attrs["tier"], "pinned": attrs["pinned"]}
        if expires_at is not None:
            overrides["expires_at"] = expires_at
        return memory_supersede(memory=earlier, body=attrs["body"], agent=agent, overrides=overrides), 1
    place = attrs["place"]
    resolved = place_for_turn(
        organisation=organisation, channel=place["channel"], kind=place["kind"], people=place["people"], agent=agent
    )
    request = replace(RememberRequest.of(attrs), expires_at=expires_at, **provenance)
    memory, _ = memory_remember_in_place(request, organisation=organisation, resolved=resolved, writer=agent)
    return memory, 0


def agent_named(*, organisation: Organisation, name: str) -> Agent:
    agent = Agent.objects.filter(organisation=organisation, name=name).first()
    if agent is None:
        raise ValueError(f"No agent named {name!r} in {organisation.slug}.")
    return agent
