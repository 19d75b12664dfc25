"""The injection of one turn: the block rendered for a question in a place, recorded line by line, and its replay.

Each render runs in one transaction and records exactly what it injected, so the prompt can be rebuilt."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.auth import Principal
from accounts.models import Agent, Organisation, User
from lib.fenced_block import source_words
from lib.metrics import stage_timer
from memories.errors import TurnConflict
from memories.models import (
    Injection,
    InjectionLine,
    Memory,
)
from memories.places import PlaceInTurn, subject_label, subject_names
from memories.recall.query import recall, render_candidates, with_recalled_episodes
from memories.scopes import SCOPE_ORDER, Place, solo_person
from memories.turns import render
from memories.turns.sections import plane_sections


@dataclass
class RenderOutput:
    """What a render answers: its record, the block, and the lines of the facts it injected."""

    injection: Injection
    text: str
    facts: list[InjectionLine]
    omissions: list[dict]
    faded: list[dict]
    replayed: bool = False


@dataclass(frozen=True)
class TurnRequest:
    """What one render was asked: a turn id seen again must be asked the same."""

    place: Place
    question: str
    cutoff: date
    agent: Agent | None
    user: User | None

    def matches(self, injection: Injection) -> bool:
        return (
            injection.place_channel == self.place.channel
            and injection.place_kind == self.place.kind
            and list(injection.place_people) == list(self.place.people)
            and injection.question == self.question
            and injection.cutoff == self.cutoff
            and injection.agent_id == getattr(self.agent, "pk", None)
            and injection.user_id == getattr(self.user, "pk", None)
        )


def _caps() -> dict[str, render.RenderCaps]:
    return {scope: render.RenderCaps.from_setting(settings.MEMORY_RENDER_CAPS[scope]) for scope in SCOPE_ORDER}


def _render_fact(row: dict, names: dict[str, str]) -> render.RenderFact:
    created = row["created_at"].astimezone(UTC)
    occurred = row["occurred_at"].astimezone(UTC) if row["occurred_at"] else None
    return render.RenderFact(
        id=str(row["id"]),
        scope=row["scope"],
        tier=row["tier"],
        author=row["author"],
        source=source_words(row["source_kind"], row["source_label"], row["source_ref"]),
        learned_on=created.date(),
        dated=(occurred or created).date(),
        text=row["body"],
        scope_label=row["scope_label"],
        pinned=row["pinned"],
        subject_type=row["subject_type"],
        subject_label=subject_label(row, names),
    )


def _answer_again(injection: Injection, request: TurnRequest) -> RenderOutput:
    """A turn id rendered before answers its record, if it is asked the same."""
    if not request.matches(injection):
        raise TurnConflict("turn_id", "This turn was already rendered with a different request; use a new turn id.")
    return _replayed_output(injection)


def injection_render(
    *,
    principal: Principal,
    resolved: PlaceInTurn,
    turn_id: str,
    question: str = "",
    cutoff: date | None = None,
    now: datetime | None = None,
) -> RenderOutput:
    """Render the memory block for one turn, for the principal in its place, and record exactly what it injected.
    A turn id is rendered once: the same request again replays the record (the same bytes), another is a conflict."""
    organisation = principal.organisation
    now = now or timezone.now()
    request = TurnRequest(
        place=resolved.place,
        question=(question or "").strip(),
        cutoff=cutoff or now.date(),
        agent=principal.agent,
        user=principal.user,
    )
    existing = Injection.objects.filter(organisation=organisation, turn_id=turn_id).first()
    if existing is not None:
        return _answer_again(existing, request)
    caps = _caps()
    with stage_timer("render", "selection"):
        selection = _selection(organisation=organisation, resolved=resolved, request=request, caps=caps, now=now)
    with stage_timer("render", "compose"):
        sections, failed_planes = plane_sections(
            principal=principal, place=request.place, cutoff=request.cutoff, limit=caps[SCOPE_ORDER[0]].fact_clamp
        )
        selection.omissions.extend(failed_planes)
        text = render.compose(selection.paragraphs, sections)
    try:
        with stage_timer("render", "record"):
            return _recorded(organisation, turn_id, request, selection, sections, text)
    except IntegrityError:
        # The same turn rendered concurrently: the first record stands.
        return _answer_again(Injection.objects.get(organisation=organisation, turn_id=turn_id), request)


def _candidates(
    *, organisation: Organisation, request: TurnRequest, caps: dict, now: datetime
) -> tuple[list[dict], dict[str, int], list[str]]:
    """The rows a render chooses from, those the question recalls first; each scope's total; recall's notices."""
    rows, totals = render_candidates(
        organisation=organisation, place=request.place, agent=request.agent, caps=caps, now=now
    )
    if not request.question:
        return rows, totals, []
    ranked = recall(
        organisation=organisation,
        place=request.place,
        question=request.question,
        limit=settings.MEMORY_RECALL_MAX_LIMIT,
        agent=request.agent,
        now=now,
    )
    # Episodes reach render only when the question recalls them (never as filler).
    rows = with_recalled_episodes(rows, ranked.rows, now=now, fade_days=settings.MEMORY_NOTE_FADE_DAYS)
    order = {str(row["id"]): position for position, row in enumerate(ranked.rows)}
    # The facts the question recalls lead their sections; the rest keep recency order.
    rows.sort(key=lambda row: order.get(str(row["id"]), len(order)))
    return rows, totals, [ranked.notice]


def _selection(
    *,
    organisation: Organisation,
    resolved: PlaceInTurn,
    request: TurnRequest,
    caps: dict,
    now: datetime,
) -> render.Selection:
    """What of the candidates reaches the prompt, with what was left out reported."""
    rows, totals, notices = _candidates(organisation=organisation, request=request, caps=caps, now=now)
    names = subject_names(rows, resolved=resolved, organisation=organisation)
    facts = [_render_fact(row, names) for row in rows]
    passed = {scope: sum(1 for fact in facts if fact.scope == scope) for scope in SCOPE_ORDER}
    labels = {"channel": request.place.channel}
    person = solo_person(request.place)
    if person:
        labels["person"] = resolved.label_for(person)
    return render.select(
        facts,
        cutoff=request.cutoff,
        caps=caps,
        fade_days=settings.MEMORY_NOTE_FADE_DAYS,
        labels=labels,
        left_out={scope: max(totals.get(scope, 0) - passed[scope], 0) for scope in SCOPE_ORDER},
        notices=notices,
    )


@transaction.atomic
def _recorded(
    organisation: Organisation,
    turn_id: str,
    request: TurnRequest,
    selection: render.Selection,
    sections: list[render.Section],
    text: str,
) -> RenderOutput:
    """The injection recorded with its lines, all or nothing: IntegrityError if the turn id was recorded
    meanwhile."""
    injection = Injection.objects.create(
        organisation=organisation,
        turn_id=turn_id,
        agent=request.agent,
        user=request.user,
        place_channel=request.place.channel,
        place_kind=request.place.kind,
        place_people=list(request.place.people),
        question=request.question,
        cutoff=request.cutoff,
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
        sections=[{"name": section.name, "title": section.title, "lines": len(section.lines)} for section in sections],
        omissions=selection.omissions,
        faded=selection.faded,
        duplicates=selection.duplicates,
        text_sha256=hashlib.sha256(text.encode()).hexdigest(),
        text_chars=len(text),
        render_version=render.RENDER_VERSION,
    )
    fact_lines, section_lines = _injection_lines(injection, selection, sections)
    InjectionLine.objects.bulk_create(fact_lines + section_lines)
    return RenderOutput(
        injection=injection, text=text, facts=fact_lines, omissions=selection.omissions, faded=selection.faded
    )


def _injection_lines(
    injection: Injection, selection: render.Selection, sections: list[render.Section]
) -> tuple[list[InjectionLine], list[InjectionLine]]:
    """The record's lines, in the block's order: the facts' lines, then each section's."""
    facts: list[dict[str, object]] = [
        dict(
            memory_id=item.fact.id,
            block=item.fact.scope,
            section=item.section,
            scope=item.fact.scope,
            author=item.fact.author,
            tier=item.fact.tier,
            line=item.line,
        )
        for item in selection.lines
    ]
    in_sections = [
        dict(memory_id=memory_id, block=f"section:{section.name}", line=line)
        for section in sections
        # A section made without ids (not by `render.section_from`) has lines of no memory.
        for line, memory_id in itertools.zip_longest(section.lines, section.memory_ids[: len(section.lines)])
    ]
    lines = [
        InjectionLine(organisation=injection.organisation, injection=injection, position=position, **fields)
        for position, fields in enumerate(facts + in_sections)
    ]
    return lines[: len(facts)], lines[len(facts) :]


@dataclass
class Replay:
    turn_id: str
    text: str
    sha256: str
    recorded_sha256: str
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
    text = render.compose(*_recorded_layout(injection, lines))
    sha = hashlib.sha256(text.encode()).hexdigest()
    return Replay(
        turn_id=injection.turn_id,
        text=text,
        sha256=sha,
        recorded_sha256=injection.text_sha256,
        identical=sha == injection.text_sha256,
        unavailable=_unavailable(injection, lines),
        render_version_matches=injection.render_version == render.RENDER_VERSION,
    )


def _unavailable(injection: Injection, lines: list[InjectionLine]) -> list[dict]:
    """Each erased line: which fact, where, and when and why it was erased."""
    erased = [line for line in lines if line.erased_at is not None]
    receipts = {
        str(row.pk): row
        for row in Memory.objects.filter(
            organisation_id=injection.organisation_id, pk__in=[line.memory_id for line in erased if line.memory_id]
        )
    }
    unavailable = []
    for line in erased:
        memory = receipts.get(str(line.memory_id))
        reason = f"erased on {line.erased_at:%Y-%m-%d}"
        if memory is not None:
            reason += f" by {memory.redacted_by_label or 'someone'}: {memory.redaction_reason}"
        unavailable.append(
            {
                "id": str(line.memory_id) if line.memory_id else None,
                "position": line.position,
                "scope": line.scope or line.block,
                "reason": reason,
                "erased_at": line.erased_at,
            }
        )
    return unavailable


def _recorded_layout(
    injection: Injection, lines: list[InjectionLine]
) -> tuple[list[render.Paragraph], list[render.Section]]:
    """The paragraphs and sections the record describes, each taking its lines in order, erased ones left out."""
    cursor = iter(lines)

    def shown(count: int) -> tuple[str, ...]:
        taken = [next(cursor) for _ in range(count)]
        return tuple(line.line for line in taken if line.erased_at is None)

    paragraphs = []
    for recorded in injection.paragraphs:
        profile, recent = shown(recorded["profile"]), shown(recorded["recent"])
        if profile or recent:
            paragraphs.append(
                render.Paragraph(
                    scope=recorded["scope"],
                    label=recorded["label"],
                    profile=profile,
                    recent=recent,
                    left_out=recorded["left_out"],
                )
            )
    sections = [
        render.Section(name=recorded["name"], title=recorded["title"], lines=shown(recorded["lines"]))
        for recorded in injection.sections
    ]
    return paragraphs, sections


def _replayed_output(injection: Injection) -> RenderOutput:
    facts = [
        line
        for line in injection.lines.order_by("position")
        if not line.block.startswith("section:") and line.erased_at is None
    ]
    return RenderOutput(
        injection=injection,
        text=injection_replay(injection=injection).text,
        facts=facts,
        omissions=injection.omissions,
        faded=injection.faded,
        replayed=True,
    )
