"""Writes an agent's turn makes: places, remembering under the scope rules, forgetting, and injections.

Each action runs in one transaction and writes its audit row there. The
organisation, agent and person always come from the authenticated principal,
passed in by the caller.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Agent, Membership, Organisation, User
from accounts.people import people_labels, person_lookup
from memories import planes, render, services
from memories.errors import LimitReached, TurnConflict  # noqa: F401 - LimitReached re-exported for old imports
from memories.models import (
    Author,
    Bucket,
    Injection,
    InjectionLine,
    Memory,
    Scope,
    SourceKind,
    SubjectType,
)
from memories.places import PlaceInTurn
from memories.recall import recall, render_candidates, with_recalled_episodes
from memories.scopes import PERSON, SCOPE_ORDER, WORKSPACE, Place, ScopeChoice, scope_for, solo_person
from memories.services import memory_remember, memory_set_pinned, memory_supersede


def user_subject_id(*, organisation: Organisation, subject_id: str) -> str:
    """A user subject is stored by the person's id; a handle or username of the organisation is resolved."""
    membership = person_lookup(organisation=organisation, name=(subject_id or "").strip())
    if membership is None:
        raise ValidationError({"subject_id": ["A user subject must be a person of your organisation."]})
    return str(membership.user_id)


def _only_for_id(*, organisation: Organisation, resolved: PlaceInTurn, only_for: str, user: User | None) -> str:
    """The person `only_for` keeps a fact for: the writer themself, or (for an agent) a person of the place."""
    membership = person_lookup(organisation=organisation, name=only_for)
    if user is not None:
        if membership is None or membership.user_id != user.pk:
            raise ValidationError({"only_for": ["A person may keep a fact only for themself."]})
        return str(user.pk)
    in_place = membership is not None and (
        resolved.place.kind == "public" or str(membership.user_id) in resolved.place.people
    )
    if not in_place:
        raise ValidationError(
            {"only_for": [f"only_for names a person of this place; {only_for!r} is not in {resolved.place.channel}."]}
        )
    return str(membership.user_id)


def _write_scope(
    *, organisation: Organisation, resolved: PlaceInTurn, scope: str | None, only_for: str | None, user: User | None
) -> ScopeChoice:
    """The scope a write in this place goes to, with the reason when it is not the one asked for."""
    place = resolved.place
    only_for_id = None
    if only_for:
        only_for_id = _only_for_id(organisation=organisation, resolved=resolved, only_for=only_for, user=user)
    narrowed = ""
    if scope == PERSON and not only_for_id and solo_person(place) is None:
        if user is None:
            raise ValidationError(
                {
                    "scope": [
                        "A person fact is written only in a DM with exactly one person; in this "
                        f"{place.kind} channel name the person with only_for, or drop scope."
                    ]
                }
            )
        only_for_id = str(user.pk)
        narrowed = "a person fact outside a DM with one person is kept for you alone"
    if scope == WORKSPACE and user is not None and not _is_owner(organisation=organisation, user=user):
        # A workspace fact reaches every agent's prompt everywhere, and only owners change one.
        scope = None
        narrowed = "only owners write workspace facts; kept in this place"
    choice = scope_for(place, scope, only_for_id)
    return replace(choice, reason=narrowed) if narrowed else choice


def _subject(
    *, organisation: Organisation, choice: ScopeChoice, subject_type: str | None, subject_id: str
) -> tuple[str, str]:
    """Whom the fact is about: said by the caller, or, only in a person scope, that person."""
    if subject_type is None:
        if choice.scope != Scope.PERSON:
            # A personal fact must name whom it is about; it is never defaulted to nobody.
            raise ValidationError(
                {
                    "subject_type": [
                        "Say whom this fact is about: user or candidate with subject_id, or workspace for an "
                        "operational fact. Only a fact kept in a person scope (a DM, or only_for) defaults to "
                        "that person."
                    ]
                }
            )
        return SubjectType.USER, choice.ref
    if subject_type == SubjectType.USER:
        return subject_type, user_subject_id(organisation=organisation, subject_id=subject_id)
    return subject_type, subject_id or ""


def memory_remember_in_place(
    *,
    organisation: Organisation,
    resolved: PlaceInTurn,
    body: str,
    agent: Agent | None = None,
    user: User | None = None,
    scope: str | None = None,
    only_for: str | None = None,
    subject_type: str | None = None,
    subject_id: str = "",
    tier: str = "log",
    pinned: bool = False,
    expires_at: datetime | None = None,
    ttl_days: int | None = None,
    source_kind: str | None = None,
    source_ref: str = "",
    source_label: str = "",
    run_id: str = "",
    occurred_at: datetime | None = None,
    now: datetime | None = None,
) -> tuple[Memory, ScopeChoice]:
    """Remember one fact said in a place, in the narrowest scope the place allows.

    An agent writes an inference (author `model`, bucket `learned`); a person
    writes a note (author `person`, bucket `user`, owned by them). A person
    fact asked for outside a DM with one person is refused for an agent (it
    must say whom with `only_for`) and kept for the person themself when a
    person writes it.
    """
    if (agent is None) == (user is None):
        raise ValueError("exactly one of agent and user writes a memory")
    now = now or timezone.now()
    choice = _write_scope(organisation=organisation, resolved=resolved, scope=scope, only_for=only_for, user=user)
    if expires_at is not None and ttl_days is not None:
        raise ValidationError({"ttl_days": ["Give expires_at or ttl_days, not both."]})
    if ttl_days is not None:
        expires_at = now + timedelta(days=ttl_days)
    scope_label = ""
    if choice.scope == Scope.CHANNEL:
        scope_label = resolved.place.channel
    elif choice.scope == Scope.PERSON:
        scope_label = resolved.label_for(choice.ref) or _label_of(organisation=organisation, person_id=choice.ref)
    subject_type, subject_id = _subject(
        organisation=organisation, choice=choice, subject_type=subject_type, subject_id=subject_id
    )

    is_agent = agent is not None
    fields = dict(
        organisation=organisation,
        bucket=Bucket.LEARNED if is_agent else Bucket.USER,
        author=Author.MODEL if is_agent else Author.PERSON,
        body=body,
        source_kind=source_kind or (SourceKind.MESSAGE if is_agent else SourceKind.PERSON),
        owner=None if is_agent else user,
        agent=agent,
        written_by=user,
        subject_type=subject_type,
        subject_id=subject_id,
        scope=choice.scope,
        scope_ref=choice.ref,
        scope_label=scope_label,
        source_ref=source_ref,
        source_label=source_label,
        source_run_id=run_id,
        tier=tier,
        pinned=pinned,
        expires_at=expires_at,
        occurred_at=occurred_at,
        now=now,
    )
    # The live-fact caps are held by `memory_remember` itself, on every path that writes.
    memory = memory_remember(**fields)
    return memory, choice


def _is_owner(*, organisation: Organisation, user: User) -> bool:
    return Membership.objects.filter(organisation=organisation, user=user, role=Membership.Role.OWNER).exists()


def _label_of(*, organisation: Organisation, person_id: str) -> str:
    membership = person_lookup(organisation=organisation, name=person_id)
    return membership.label if membership is not None else ""


def memory_forget(*, memory: Memory, reason: str, actor: User | None = None, agent: Agent | None = None) -> Memory:
    """Forget a fact and every version of it: erase body and vector, keep a receipt per row (who, when, why)."""
    return services.memory_forget(memory=memory, reason=reason or "forgotten on request", actor=actor, agent=agent)


def memory_correct(
    *,
    memory: Memory,
    body: str,
    actor: User | None = None,
    agent: Agent | None = None,
    overrides: dict | None = None,
) -> Memory:
    return memory_supersede(memory=memory, body=body, actor=actor, agent=agent, overrides=overrides)


def memory_pin(*, memory: Memory, pinned: bool, actor: User | None = None, agent: Agent | None = None) -> Memory:
    if memory.superseded_by_id is not None:
        raise ValidationError({"memory": ["Only the current version of a memory can be pinned."]})
    return memory_set_pinned(memory=memory, pinned=pinned, actor=actor, agent=agent)


# --- Idempotency ------------------------------------------------------------------


# --- Render and injections ----------------------------------------------------------


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
    sections, failed_planes = planes.plane_sections(
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
