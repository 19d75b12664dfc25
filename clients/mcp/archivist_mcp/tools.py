"""The nine tools, each an async function of the caller's client and the tool's arguments (`TOOLS`).

Every tool is one or two API calls: tenancy, scope, caps, fencing and the injection record stay where the
API enforces them. `server.build_server` gives each tool its client and turns refusals into tool errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Literal

from archivist_client import AsyncArchivist, Forgotten
from archivist_client.models import MemoryDetail
from archivist_client.text import fenced, inline, label
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from archivist_mcp.results import Changed, Ingested, Listed, MemoryRead, Recalled, Remembered, Rendered, answer, fact


class PlaceInput(BaseModel):
    channel: str = Field(description="The channel's id in your chat system.", max_length=200)
    kind: Literal["dm", "private", "public"] = Field(
        description="dm, private or public: decides which scopes may be recalled and written here."
    )
    people: list[str] = Field(default_factory=list, description="Handles or usernames of the people here.")


class EventInput(BaseModel):
    id: str = Field(default="", description="Your id for the event; resent ids are skipped.")
    role: Literal["user", "assistant", "system", "tool"]
    author: str = Field(default="", description="Who wrote it: a handle or username for people.")
    text: str
    time: str = Field(description="When it happened (ISO 8601).")


PlaceArg = Annotated[PlaceInput | None, Field(description="The place of this turn; default: the server's place.")]


@dataclass(frozen=True)
class Tool:
    """A tool: `run(archivist, **arguments)`, named after `run`, with what the model is told of it."""

    run: Callable[..., Awaitable[CallToolResult]]
    description: str
    answers: type[BaseModel]
    annotations: ToolAnnotations


TOOLS: list[Tool] = []


def tool(answers: type[BaseModel], *, read_only: bool = False, destructive: bool = False, idempotent: bool = False):
    """Adds the function to TOOLS: a tool whose structured content is `answers`, with these hints for clients.

    The function's docstring, on one line, is the tool's description; its first parameter is the caller's
    client, the others are the tool's arguments.
    """
    # No tool reaches past the Archivist server it was given, hence no open world.
    hints = ToolAnnotations(
        read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=False
    )

    def add(run: Callable[..., Awaitable[CallToolResult]]) -> Callable[..., Awaitable[CallToolResult]]:
        TOOLS.append(Tool(run, " ".join(run.__doc__.split()), answers, hints))
        return run

    return add


def _place(given: PlaceInput | None) -> dict | None:
    return given.model_dump() if given is not None else None


@tool(Remembered)
async def remember(
    archivist: AsyncArchivist,
    body: Annotated[str, Field(description="The fact, at most 2,000 characters (refused, never cut).")],
    place: PlaceArg = None,
    scope: Annotated[Literal["workspace", "channel", "person"] | None, Field(description="Asked-for scope.")] = None,
    only_for: Annotated[str | None, Field(description="A handle: keep it for this person alone.")] = None,
    subject_type: Annotated[
        Literal["user", "candidate", "workspace"] | None,
        Field(description="Whom it is about; required outside a DM: workspace for an operational fact."),
    ] = None,
    subject_id: Annotated[str | None, Field(description="The user's handle or the candidate's id.")] = None,
    tier: Annotated[Literal["profile", "log", "note"] | None, Field(description="profile, log or note.")] = None,
    ttl_days: Annotated[int | None, Field(description="Keep it this many days (default 90).")] = None,
    source_ref: Annotated[str | None, Field(description="Your reference for where it was said.")] = None,
    source_label: Annotated[str | None, Field(description="A short label for the source.")] = None,
):
    """Remember a fact said in a place. The narrowest scope the place allows is used: a DM's fact is that
    person's, a channel's stays in the channel; `only_for` keeps it for one person."""
    row = await archivist.remember(
        body=body,
        place=_place(place),
        scope=scope,
        only_for=only_for,
        subject_type=subject_type,
        subject_id=subject_id,
        tier=tier,
        ttl_days=ttl_days,
        source_ref=source_ref,
        source_label=source_label,
        source_kind="message",
    )
    result = Remembered(fact=fact(row), scope_reason=row.scope_reason)
    note = f"\n{inline(row.scope_reason)}" if row.scope_reason else ""
    return answer(f"Remembered as {row.scope} memory {row.id}.{note}\n{fenced([row])}", result)


@tool(Recalled, read_only=True, idempotent=True)
async def recall(
    archivist: AsyncArchivist,
    question: Annotated[str, Field(description="What you want to know.")],
    place: PlaceArg = None,
    limit: Annotated[int, Field(ge=1, le=40, description="At most this many facts.")] = 10,
    mode: Annotated[
        Literal["auto", "hybrid", "semantic", "lexical", "recent", "contextual", "reranked"],
        Field(description="How to rank; auto suits most turns."),
    ] = "auto",
):
    """Recall the facts most relevant to a question among those recallable in the place (auto ranks by meaning
    and words; lexical or semantic on request)."""
    found = await archivist.recall(question=question, place=_place(place), limit=limit, mode=mode)
    result = Recalled(facts=[fact(row) for row in found.results], notice=found.notice)
    text = fenced(found.results, empty="Nothing recallable here matches.")
    if found.notice:
        text += f"\n{inline(found.notice)}"
    return answer(text, result)


@tool(Rendered, idempotent=True)
async def render_context(
    archivist: AsyncArchivist,
    turn_id: Annotated[str, Field(description="Your turn's id, unique in your organisation.")],
    question: Annotated[str, Field(description="What the turn is about; ranks recent facts.")] = "",
    place: PlaceArg = None,
):
    """Render this turn's memory block (fenced, ready for the prompt) and record the injection under turn_id; the
    same turn id answers the recorded block again."""
    block = await archivist.render(turn_id=turn_id, question=question, place=_place(place))
    result = Rendered(
        turn_id=block.turn_id,
        sha256=block.sha256,
        replayed=block.replayed,
        facts=[
            {"id": str(f.id), "scope": f.scope, "section": f.section, "tier": f.tier, "author": f.author}
            for f in block.facts
        ],
        omissions=[o.model_dump(exclude_none=True) for o in block.omissions],
        faded=[o.model_dump(exclude_none=True) for o in block.faded],
    )
    # The server's block is already fenced and escaped, line by line.
    return answer(block.text or "Nothing to inject for this turn.", result)


@tool(MemoryRead, read_only=True, idempotent=True)
async def get_memory(
    archivist: AsyncArchivist,
    memory_id: Annotated[str, Field(description="The memory's id.")],
    place: PlaceArg = None,
):
    """Read one memory recallable in the place you serve: its line, provenance and versions."""
    try:
        row = await archivist.get(memory_id, place=_place(place))
    except Forgotten as gone:
        return _forgotten(gone)
    result = MemoryRead(fact=fact(row), chain=[fact(version) for version in row.chain])
    text = fenced([row]) + (f"\nVersions:\n{fenced(row.chain)}" if len(row.chain) > 1 else "")
    return answer(text, result)


def _forgotten(gone: Forgotten) -> CallToolResult:
    row = MemoryDetail.model_validate(gone.memory)
    result = MemoryRead(fact=fact(row), chain=[], receipt=gone.receipt)
    receipt = gone.receipt or {}
    text = (
        f"Memory {row.id} was forgotten on {str(receipt.get('erased_at', ''))[:10]} by "
        f"{inline(str(receipt.get('erased_by', '')))}: {inline(str(receipt.get('reason', '')))}"
    )
    return answer(text, result)


@tool(Listed, read_only=True, idempotent=True)
async def list_memories(
    archivist: AsyncArchivist,
    scope: Annotated[Literal["workspace", "channel", "person"] | None, Field(description="Only this scope.")] = None,
    state: Annotated[
        Literal["live", "expired", "superseded", "erased"] | None, Field(description="Only this state.")
    ] = "live",
    q: Annotated[str | None, Field(description="Words the body must match.")] = None,
    source_ref: Annotated[str | None, Field(description="Only memories from this source reference.")] = None,
    limit: Annotated[int, Field(ge=1, le=200, description="At most this many.")] = 20,
    place: PlaceArg = None,
):
    """List the memories recallable in the place you serve, newest first, optionally filtered."""
    rows, more = [], False
    async for row in archivist.list(
        place=_place(place), page_size=min(limit + 1, 200), scope=scope, state=state, q=q, source_ref=source_ref
    ):
        if len(rows) == limit:
            more = True
            break
        rows.append(row)
    return answer(fenced(rows), Listed(facts=[fact(row) for row in rows], more=more))


@tool(Changed)
async def correct_memory(
    archivist: AsyncArchivist,
    memory_id: Annotated[str, Field(description="The memory to correct.")],
    body: Annotated[str, Field(description="The corrected fact, at most 2,000 characters.")],
    place: PlaceArg = None,
):
    """Correct a memory: a new version with this body replaces it; the old one stays in its history."""
    row = await archivist.correct(memory_id, body=body, place=_place(place))
    return answer(f"Corrected: new version {row.id}.\n{fenced([row])}", Changed(fact=fact(row)))


@tool(Changed, idempotent=True)
async def pin_memory(
    archivist: AsyncArchivist,
    memory_id: Annotated[str, Field(description="The memory to pin or unpin.")],
    pinned: Annotated[bool, Field(description="true pins, false unpins.")] = True,
    place: PlaceArg = None,
):
    """Pin a memory (recalled and rendered before the others), or unpin it with pinned=false."""
    row = await (archivist.pin if pinned else archivist.unpin)(memory_id, place=_place(place))
    return answer(f"{'Pinned' if pinned else 'Unpinned'} {row.id}.", Changed(fact=fact(row)))


@tool(Changed, destructive=True, idempotent=True)
async def forget_memory(
    archivist: AsyncArchivist,
    memory_id: Annotated[str, Field(description="The memory to forget.")],
    reason: Annotated[str, Field(description="Why, for the receipt (at most 500 characters).")] = "",
    place: PlaceArg = None,
):
    """Forget a memory for good: its text is erased and only a receipt (who, when, why) stays."""
    row = await archivist.forget(memory_id, reason=reason, place=_place(place))
    receipt = row.receipt.model_dump(mode="json") if row.receipt else None
    return answer(f"Forgotten: {label(row)}", Changed(fact=fact(row), receipt=receipt))


@tool(Ingested, idempotent=True)
async def add_thread_events(
    archivist: AsyncArchivist,
    thread_id: Annotated[str, Field(description="The thread's id.")],
    events: Annotated[list[EventInput], Field(min_length=1, max_length=100)],
    place: PlaceArg = None,
):
    """Add what happened in a thread (at most 100 events); learned memories follow in the background. Resent
    event ids are skipped."""
    chosen = _place(place) or archivist.default_place
    rows = [{**event.model_dump(), "place": chosen} for event in events]
    done = await archivist.ingest_events(thread_id, events=rows)
    result = Ingested(
        thread=done.thread,
        accepted=done.accepted,
        duplicates=done.duplicates,
        last_sequence=done.last_sequence,
    )
    return answer(f"Stored {done.accepted} events ({done.duplicates} already there).", result)
