"""The injection of one turn: the block rendered for a question in a place, recorded line by line, and its replay.

Each render runs in one transaction and records exactly what it injected, so the prompt can be rebuilt."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Agent, Organisation, User
from accounts.people import people_labels
from memories.errors import TurnConflict
from memories.models import (
    Injection,
    InjectionLine,
    Memory,
    SubjectType,
)
from memories.places import PlaceInTurn
from memories.recall.query import recall, render_candidates, with_recalled_episodes
from memories.scopes import SCOPE_ORDER, Place, solo_person
from memories.turns import render
from memories.turns.sections import plane_sections


@dataclass
class RenderOutput:
    injection: Injection
    text: str
    facts: list[dict]
    omissions: list[dict]
    faded: list[dict]
    replayed: bool = False


def _caps() -> dict[str, render.RenderCaps]:
    return {scope: render.RenderCaps.from_setting(settings.MEMORY_RENDER_CAPS[scope]) for scope in SCOPE_ORDER}


def _render_fact(row: dict, names: dict[str, str]) -> render.RenderFact:
    source = row["source_label"] or row["source_ref"]
    created = row["created_at"].astimezone(UTC)
    occurred = row["occurred_at"].astimezone(UTC) if row["occurred_at"] else None
    subject_id = str(row["subject_id"] or "")
    return render.RenderFact(
        id=str(row["id"]),
        scope=row["scope"],
        tier=row["tier"],
        author=row["author"],
        source=f"{row['source_kind']} {source}".strip() if source else row["source_kind"],
        learned_on=created.date(),
        dated=(occurred or created).date(),
        text=row["body"],
        scope_label=row["scope_label"],
        pinned=row["pinned"],
        subject_type=row["subject_type"],
        subject_label=names.get(subject_id, "") if row["subject_type"] == SubjectType.USER else subject_id,
    )


def _subject_names(rows: list[dict], resolved: PlaceInTurn, organisation: Organisation) -> dict[str, str]:
    """How the user subjects of these rows are named (handle, else username): the place's people first,
    the rest in one query."""
    names = dict(resolved.labels)
    wanted = {str(row["subject_id"]) for row in rows if row["subject_type"] == SubjectType.USER} - set(names)
    if wanted:
        labels = people_labels(organisation=organisation, ids=sorted(wanted))
        names.update(zip(sorted(wanted), labels, strict=True))
    return names


def _same_request(injection: Injection, *, place: Place, question: str, cutoff: date, agent, user) -> bool:
    return (
        injection.place_channel == place.channel
        and injection.place_kind == place.kind
        and list(injection.place_people) == list(place.people)
        and injection.question == question
        and injection.cutoff == cutoff
        and injection.agent_id == getattr(agent, "pk", None)
        and injection.user_id == getattr(user, "pk", None)
    )


def injection_render(
    *,
    organisation: Organisation,
    resolved: PlaceInTurn,
    turn_id: str,
    principal,
    agent: Agent | None = None,
    user: User | None = None,
    question: str = "",
    cutoff: date | None = None,
    now: datetime | None = None,
) -> RenderOutput:
    """Render the memory block for one turn and record exactly what it injected.

    A turn id is rendered once: asking again with the same request replays the
    record (the same bytes), with a different one is a conflict.
    """
    now = now or timezone.now()
    cutoff = cutoff or now.date()
    place = resolved.place
    question = (question or "").strip()
    existing = Injection.objects.filter(organisation=organisation, turn_id=turn_id).first()
    if existing is not None:
        if not _same_request(existing, place=place, question=question, cutoff=cutoff, agent=agent, user=user):
            raise TurnConflict("turn_id", "This turn was already rendered with a different request; use a new turn id.")
        return _replayed_output(existing)

    caps = _caps()
    rows, totals = render_candidates(organisation=organisation, place=place, agent=agent, caps=caps, now=now)
    notices: list[str] = []
    if question:
        ranked = recall(
            organisation=organisation,
            place=place,
            question=question,
            limit=settings.MEMORY_RECALL_MAX_LIMIT,
            agent=agent,
            now=now,
        )
        notices.append(ranked.notice)
        # Issue 16: episodes reach render only when the question recalls them (never as filler).
        rows = with_recalled_episodes(rows, ranked.rows, now=now, fade_days=settings.MEMORY_NOTE_FADE_DAYS)
        order = {str(row["id"]): position for position, row in enumerate(ranked.rows)}
        # The facts the question recalls lead their sections; the rest keep recency order.
        rows.sort(key=lambda row: order.get(str(row["id"]), len(order)))
    names = _subject_names(rows, resolved, organisation)
    facts = [_render_fact(row, names) for row in rows]
    passed = {scope: sum(1 for fact in facts if fact.scope == scope) for scope in SCOPE_ORDER}
    labels = {"channel": place.channel}
    person = solo_person(place)
    if person:
        labels["person"] = resolved.label_for(person)
    selection = render.select(
        facts,
        cutoff=cutoff,
        caps=caps,
        fade_days=settings.MEMORY_NOTE_FADE_DAYS,
        labels=labels,
        left_out={scope: max(totals.get(scope, 0) - passed[scope], 0) for scope in SCOPE_ORDER},
        notices=notices,
    )
    sections, failed_planes = plane_sections(
        principal=principal, place=place, cutoff=cutoff, limit=caps[SCOPE_ORDER[0]].fact_clamp
    )
    selection.omissions.extend(failed_planes)
    text = render.compose(selection.paragraphs, sections)

    with transaction.atomic():
        try:
            with transaction.atomic():
                injection = Injection.objects.create(
                    organisation=organisation,
                    turn_id=turn_id,
                    agent=agent,
                    user=user,
                    place_channel=place.channel,
                    place_kind=place.kind,
                    place_people=list(place.people),
                    question=question,
                    cutoff=cutoff,
                    fact_ids=[item.fact.id for item in selection.lines],
                    paragraphs=[
                        {
                            "scope": paragraph.scope,
                            "label": paragraph.label,
                            "profile": len(paragraph.profile),
                            "recent": len(paragraph.recent),
                            "left_out": paragraph.left_out,
                        }
                        for paragraph in selection.paragraphs
                    ],
                    sections=[
                        {"name": section.name, "title": section.title, "lines": len(section.lines)}
                        for section in sections
                    ],
                    omissions=selection.omissions,
                    faded=selection.faded,
                    duplicates=selection.duplicates,
                    text_sha256=hashlib.sha256(text.encode()).hexdigest(),
                    text_chars=len(text),
                    render_version=render.RENDER_VERSION,
                )
        except IntegrityError:
            # The same turn rendered concurrently: the first record stands.
            existing = Injection.objects.get(organisation=organisation, turn_id=turn_id)
            if not _same_request(existing, place=place, question=question, cutoff=cutoff, agent=agent, user=user):
                raise TurnConflict(
                    "turn_id", "This turn was already rendered with a different request; use a new turn id."
                ) from None
            return _replayed_output(existing)
        lines = [
            InjectionLine(
                organisation=organisation,
                injection=injection,
                position=position,
                memory_id=item.fact.id,
                block=item.fact.scope,
                section=item.section,
                scope=item.fact.scope,
                author=item.fact.author,
                tier=item.fact.tier,
                line=item.line,
            )
            for position, item in enumerate(selection.lines)
        ]
        offset = len(lines)
        for section in sections:
            for index, line in enumerate(section.lines):
                memory_id = section.memory_ids[index] if index < len(section.memory_ids) else None
                lines.append(
                    InjectionLine(
                        organisation=organisation,
                        injection=injection,
                        position=offset,
                        memory_id=memory_id,
                        block=f"section:{section.name}",
                        line=line,
                    )
                )
                offset += 1
        InjectionLine.objects.bulk_create(lines)
    return RenderOutput(
        injection=injection,
        text=text,
        facts=[
            {
                "id": item.fact.id,
                "scope": item.fact.scope,
                "section": item.section,
                "tier": item.fact.tier,
                "author": item.fact.author,
                "line": item.line,
            }
            for item in selection.lines
        ],
        omissions=selection.omissions,
        faded=selection.faded,
    )


@dataclass
class Replay:
    text: str
    sha256: str
    identical: bool
    unavailable: list[dict]
    render_version_matches: bool


def injection_replay(*, injection: Injection) -> Replay:
    """Compose the block again from its record alone.

    Corrections made since do not change it: the record holds the lines as they
    were injected. An erased fact's line was emptied with the erasure; it is
    left out, and named with when and why it was erased.
    """
    lines = list(injection.lines.order_by("position"))
    erased_memories = {
        str(row.pk): row
        for row in Memory.objects.filter(
            organisation_id=injection.organisation_id,
            pk__in=[line.memory_id for line in lines if line.erased_at is not None and line.memory_id],
        )
    }
    unavailable = []
    for line in lines:
        if line.erased_at is None:
            continue
        memory = erased_memories.get(str(line.memory_id))
        unavailable.append(
            {
                "id": str(line.memory_id) if line.memory_id else None,
                "position": line.position,
                "scope": line.scope or line.block,
                "reason": (
                    f"erased on {line.erased_at:%Y-%m-%d} by {memory.redacted_by_label or 'someone'}: "
                    f"{memory.redaction_reason}"
                    if memory is not None
                    else f"erased on {line.erased_at:%Y-%m-%d}"
                ),
                "erased_at": line.erased_at,
            }
        )
    cursor = iter(lines)
    paragraphs = []
    for recorded in injection.paragraphs:
        profile = [next(cursor) for _ in range(recorded["profile"])]
        recent = [next(cursor) for _ in range(recorded["recent"])]
        profile_lines = tuple(line.line for line in profile if line.erased_at is None)
        recent_lines = tuple(line.line for line in recent if line.erased_at is None)
        if profile_lines or recent_lines:
            paragraphs.append(
                render.Paragraph(
                    scope=recorded["scope"],
                    label=recorded["label"],
                    profile=profile_lines,
                    recent=recent_lines,
                    left_out=recorded["left_out"],
                )
            )
    sections = []
    for recorded in injection.sections:
        taken = [next(cursor) for _ in range(recorded["lines"])]
        sections.append(
            render.Section(
                name=recorded["name"],
                title=recorded["title"],
                lines=tuple(line.line for line in taken if line.erased_at is None),
            )
        )
    text = render.compose(paragraphs, sections)
    sha = hashlib.sha256(text.encode()).hexdigest()
    return Replay(
        text=text,
        sha256=sha,
        identical=sha == injection.text_sha256,
        unavailable=unavailable,
        render_version_matches=injection.render_version == render.RENDER_VERSION,
    )


def _replayed_output(injection: Injection) -> RenderOutput:
    replay = injection_replay(injection=injection)
    facts = [
        {
            "id": str(line.memory_id),
            "scope": line.scope,
            "section": line.section,
            "tier": line.tier,
            "author": line.author,
            "line": line.line,
        }
        for line in injection.lines.order_by("position")
        if not line.block.startswith("section:") and line.erased_at is None
    ]
    return RenderOutput(
        injection=injection,
        text=replay.text,
        facts=facts,
        omissions=injection.omissions,
        faded=injection.faded,
        replayed=True,
    )
