"""The memory block injected into one turn: order, precedence, caps, fading and fencing."""

# Pure: it reads nothing and writes nothing, so what it returns is exactly what
# the caller records, and a record re-composes to the same bytes.
#
# Two steps, kept apart so a replay needs only the record:
#
# 1. `select` decides which facts reach the prompt. Notes older than the fade
#    window (judged against a `cutoff` the caller passes in and records) drop out
#    first, so a faded note never takes a slot a live fact could use. Then
#    precedence: the most specific scope claims a fact's normalised text (person,
#    then channel, then workspace), and the wider scopes lose their copies
#    *before* caps apply. Then each section's count limit, character budget and
#    per-fact clamp, in that order. Every fact that reaches the prompt becomes
#    one finished line.
# 2. `compose` lays the finished lines out: one labelled paragraph per scope
#    present, widest first (workspace, channel, person), each with a profile and
#    a recent section, fenced in `<memory>` … `</memory>`.
#
# A body can never close the fence, start a heading or start a line of the
# block: it is folded onto its own line (line breaks become a visible mark),
# `&` and everything that reads as `<` or `>` (look-alike brackets included) is
# written as an entity, and markdown images and links lose the adjacency that
# makes them markdown. Invisible characters (tag characters, zero-width and bidi
# controls, U+FEFF, soft hyphens) are shown as visible marks such as `[U+200B]`,
# with valid emoji sequences left intact (`lib.text`).
#
# Every line says whom its fact is about, and the preamble says that these facts
# are never on their own a reason to accept or refuse anybody. The fence, the
# preamble and the line are `lib.fenced_block`'s, which the clients ship too.

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from lib import fenced_block
from lib.fenced_block import FENCE_CLOSE, FENCE_OPEN, PREAMBLE, inline
from memories.scopes import CHANNEL, PERSON, SCOPE_ORDER, WORKSPACE

# Bump when `compose` or `rendered_fact_line` would lay out the same record differently;
# a record made by another version says so on replay instead of pretending.
RENDER_VERSION = 3  # 2: markdown images and links made inert; 3: whom each fact is about, invisibles marked

PROFILE = "profile"
RECENT = "recent"

_LINE_BREAKS = re.compile(r"[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]+")
_SPACES = re.compile(r"[ \t]+")
_KEY_TRIM = ".,;:!?\"'()[]{}-\u2013\u2014\u2026 "


@dataclass(frozen=True)
class RenderCaps:
    """One scope's bounds: how many profile and recent facts, in how many characters, each clamped."""

    profile_limit: int
    recent_limit: int
    profile_budget: int
    recent_budget: int
    fact_clamp: int

    @classmethod
    def from_setting(cls, value: dict) -> RenderCaps:
        return cls(**{name: int(value[name]) for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class RenderFact:
    """One recallable fact as the renderer needs it."""

    id: str
    scope: str
    tier: str  # profile, log or note
    author: str  # model or person
    source: str
    learned_on: date  # when it was written: notes fade from this
    dated: date  # the date shown: when it happened, if known, else when it was written
    text: str
    scope_label: str = ""
    pinned: bool = False
    subject_type: str = "workspace"  # whom it is about: workspace, user or candidate
    subject_label: str = ""  # the person's username, or the candidate's id

    @property
    def section(self) -> str:
        return PROFILE if self.tier == PROFILE else RECENT


@dataclass(frozen=True)
class RenderedLine:
    """A fact that reached the prompt, and the exact line it became."""

    fact: RenderFact
    section: str
    line: str


@dataclass(frozen=True)
class Paragraph:
    """One scope's paragraph, as recorded: enough to compose it again byte for byte."""

    scope: str
    label: str
    profile: tuple[str, ...] = ()
    recent: tuple[str, ...] = ()
    left_out: int = 0


@dataclass(frozen=True)
class Section:
    """A block another plane adds (system claims, for one), fenced with the rest."""

    name: str
    title: str
    lines: tuple[str, ...]
    memory_ids: tuple[str | None, ...] = ()


@dataclass
class Selection:
    lines: list[RenderedLine] = field(default_factory=list)
    paragraphs: list[Paragraph] = field(default_factory=list)
    omissions: list[dict] = field(default_factory=list)
    faded: list[dict] = field(default_factory=list)
    duplicates: list[dict] = field(default_factory=list)


def fact_key(text: str) -> str:
    """Normalised text, for precedence: case, width, spacing and end punctuation do not make a new fact."""
    text = unicodedata.normalize("NFKC", text or "").casefold()
    return _SPACES.sub(" ", _LINE_BREAKS.sub(" ", text)).strip().strip(_KEY_TRIM)


def rendered_fact_line(fact: RenderFact, limit: int) -> str:
    """`- [scope · about whom · who · source · date] text`, every untrusted part escaped (`lib.fenced_block`)."""
    return fenced_block.fact_line(
        scope=fact.scope,
        scope_label=fact.scope_label,
        subject_type=fact.subject_type,
        subject_label=fact.subject_label,
        author=fact.author,
        source=fact.source,
        dated=fact.dated.isoformat(),
        text=fact.text,
        limit=limit,
        pinned=fact.pinned,
    )


def _take(facts: Sequence[RenderFact], section: str, caps: RenderCaps) -> tuple[list[RenderedLine], int]:
    """One section's facts, pinned first, within its count limit, character budget and clamp, in that order;
    and how many were dropped."""
    limit, budget = getattr(caps, f"{section}_limit"), getattr(caps, f"{section}_budget")
    # sorted is stable: the caller's order stands among the pinned and among the rest.
    candidates = sorted((fact for fact in facts if fact.section == section), key=lambda fact: not fact.pinned)
    taken: list[RenderedLine] = []
    used = 0
    for fact in candidates:
        if len(taken) >= limit:
            break
        line = rendered_fact_line(fact, caps.fact_clamp)
        # The first fact always fits: the clamp, not the budget, bounds a lone long fact.
        if taken and used + len(line) > budget:
            break
        used += len(line) + 1
        taken.append(RenderedLine(fact=fact, section=section, line=line))
    return taken, len(candidates) - len(taken)


def select(
    facts: Sequence[RenderFact],
    *,
    cutoff: date,
    caps: dict[str, RenderCaps],
    fade_days: int,
    labels: dict[str, str] | None = None,
    left_out: dict[str, int] | None = None,
    notices: Sequence[str] = (),
) -> Selection:
    """Decide what reaches the prompt, in the caller's order (pinned first within each section).

    `left_out` counts facts per scope the caller did not even pass in (it reads
    a bounded number); they are reported as omissions beside the capped ones.
    `notices` are what gave way before (recall's fallbacks): each is recorded
    as an omission of scope `recall`, so the response and the record say so.
    """
    labels = labels or {}
    left_out = left_out or {}
    selection = Selection()
    selection.omissions.extend({"scope": "recall", "count": 0, "reason": notice} for notice in notices if notice)
    by_scope: dict[str, list[RenderFact]] = {scope: [] for scope in SCOPE_ORDER}
    for fact in facts:
        if fact.scope not in by_scope:
            raise ValueError(f"unknown scope {fact.scope!r}")
        by_scope[fact.scope].append(fact)
    # The fade runs first, so precedence and caps see only what survives.
    by_scope = _unfaded(by_scope, cutoff=cutoff, fade_days=fade_days, faded=selection.faded)
    by_scope = _by_precedence(by_scope, duplicates=selection.duplicates)
    for scope in SCOPE_ORDER:
        _capped(
            scope,
            by_scope[scope],
            caps[scope],
            label=labels.get(scope, ""),
            left_out=left_out.get(scope, 0),
            into=selection,
        )
    return selection


def _unfaded(
    by_scope: dict[str, list[RenderFact]], *, cutoff: date, fade_days: int, faded: list[dict]
) -> dict[str, list[RenderFact]]:
    """Each scope's facts without the notes older than the fade window, counting in `faded` what went."""
    # The API refuses days at the calendar's ends; a direct caller still must not overflow the fade.
    oldest_note = cutoff - timedelta(days=fade_days) if cutoff > date.min + timedelta(days=fade_days) else date.min
    kept_by_scope = {}
    for scope in SCOPE_ORDER:
        kept = [fact for fact in by_scope[scope] if fact.tier != "note" or fact.learned_on >= oldest_note]
        if len(kept) != len(by_scope[scope]):
            faded.append({"scope": scope, "count": len(by_scope[scope]) - len(kept)})
        kept_by_scope[scope] = kept
    return kept_by_scope


def _by_precedence(by_scope: dict[str, list[RenderFact]], *, duplicates: list[dict]) -> dict[str, list[RenderFact]]:
    """The most specific scope claims a text before the wider ones see it; `duplicates` counts their copies."""
    claimed: set[str] = set()
    unique_by_scope = {}
    for scope in reversed(SCOPE_ORDER):
        unique = []
        for fact in by_scope[scope]:
            key = fact_key(fact.text)
            if key in claimed:
                continue
            claimed.add(key)
            unique.append(fact)
        if len(unique) != len(by_scope[scope]):
            duplicates.append({"scope": scope, "count": len(by_scope[scope]) - len(unique)})
        unique_by_scope[scope] = unique
    return unique_by_scope


def _capped(
    scope: str, facts: list[RenderFact], caps: RenderCaps, *, label: str, left_out: int, into: Selection
) -> None:
    """One scope's profile and recent sections within its caps, added to the selection with what was dropped."""
    profile, profile_dropped = _take(facts, PROFILE, caps)
    recent, recent_dropped = _take(facts, RECENT, caps)
    dropped = profile_dropped + recent_dropped + left_out
    if dropped:
        into.omissions.append(
            {
                "scope": scope,
                "count": dropped,
                "reason": f"{dropped} {scope} fact(s) beyond the render limits were not injected",
            }
        )
    if profile or recent:
        into.lines.extend(profile + recent)
        into.paragraphs.append(
            Paragraph(
                scope=scope,
                label=label,
                profile=tuple(item.line for item in profile),
                recent=tuple(item.line for item in recent),
                left_out=dropped,
            )
        )


_HEADINGS = {
    WORKSPACE: ("Workspace memory: shared by everyone in this organisation.", "About the workspace:"),
    CHANNEL: ("Channel memory{label}: recalled only in this channel.", "About this channel:"),
    PERSON: ("Person memory{label}: recalled only in a DM with this person.", "About this person:"),
}


def compose(paragraphs: Sequence[Paragraph], sections: Sequence[Section] = ()) -> str:
    """The fenced block, or "" when there is nothing to inject."""
    blocks: list[str] = []
    for paragraph in paragraphs:
        intro, profile_heading = _HEADINGS[paragraph.scope]
        label = f" ({inline(paragraph.label, 80)})" if paragraph.label else ""
        lines = [intro.format(label=label)]
        if paragraph.profile:
            lines.append(profile_heading)
            lines.extend(paragraph.profile)
        if paragraph.recent:
            lines.append("Recently:")
            lines.extend(paragraph.recent)
        if paragraph.left_out:
            lines.append(f"({paragraph.left_out} more here were left out by the size limits; recall can find them.)")
        blocks.append("\n".join(lines))
    for section in sections:
        if section.lines:
            blocks.append("\n".join([inline(section.title, 200) + ":", *section.lines]))
    if not blocks:
        return ""
    return "\n\n".join([FENCE_OPEN + "\n" + PREAMBLE, *blocks]) + "\n" + FENCE_CLOSE


def section_from(name: str, title: str, lines: Iterable, limit: int) -> Section:
    """A plane's section with every line folded, clamped and escaped like a fact.

    A line is a string or a `(text, memory_id)` pair, so what a plane injected
    can be traced back to its rows and erased from the record with them.
    """
    texts: list[str] = []
    ids: list[str | None] = []
    for item in lines:
        text, memory_id = (item, None) if isinstance(item, str) else (item[0], item[1])
        texts.append("- " + inline(text, limit))
        ids.append(str(memory_id) if memory_id is not None else None)
    return Section(name=name, title=title, lines=tuple(texts), memory_ids=tuple(ids))
