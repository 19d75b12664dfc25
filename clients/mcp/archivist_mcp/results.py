"""What the tools hand back: each fact as one labelled, escaped line (never the raw body), in the text and
in the structured content alike, or the API's refusal as a tool error."""

from __future__ import annotations

from typing import Any

from archivist_client.errors import ArchivistError
from archivist_client.text import fact_line, inline
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field


class Fact(BaseModel):
    """A memory as a model sees it: its labelled, neutralised line and its metadata; never the raw body."""

    id: str
    line: str = Field(
        description="`- [scope · about whom · who · source · date · memory id] text`: render's line, on one line."
    )
    scope: str
    scope_label: str
    state: str = "live"
    tier: str = ""
    pinned: bool = False


class Remembered(BaseModel):
    fact: Fact
    scope_reason: str = Field(description="Why the scope used differs from the one asked for; empty if not.")


class Recalled(BaseModel):
    facts: list[Fact]
    notice: str = ""


class Rendered(BaseModel):
    turn_id: str
    sha256: str
    replayed: bool
    facts: list[dict[str, Any]] = Field(description="Each injected fact: id, scope, section, tier, author.")
    omissions: list[dict[str, Any]] = Field(description="What the size limits left out, per scope.")
    faded: list[dict[str, Any]]


class MemoryRead(BaseModel):
    fact: Fact
    chain: list[Fact] = Field(description="Every version you may see, oldest first.")
    receipt: dict[str, Any] | None = Field(default=None, description="Who forgot it, when and why, if forgotten.")


class Listed(BaseModel):
    facts: list[Fact]
    more: bool = Field(description="True when more memories match than were returned.")


class Changed(BaseModel):
    fact: Fact
    receipt: dict[str, Any] | None = None


class Ingested(BaseModel):
    thread: str
    accepted: int
    duplicates: int
    last_sequence: int


def fact(row) -> Fact:
    return Fact(
        id=str(row.id),
        line=fact_line(row),
        scope=row.scope,
        scope_label=inline(row.scope_label, 150),
        state=getattr(row, "state", "live"),
        tier=getattr(row, "tier", ""),
        pinned=bool(getattr(row, "pinned", False)),
    )


def refusal(error: ArchivistError) -> CallToolResult:
    """The API's refusal as a tool error the model can act on: the detail, then each field and its messages."""
    lines = [f"Archivist refused this call ({error.status or 'no answer'} {error.code}): {inline(error.detail)}"]
    lines += [f"- {inline(name, 100)}: {inline(' '.join(messages))}" for name, messages in error.fields.items()]
    return CallToolResult(
        content=[TextContent(type="text", text="\n".join(lines))],
        structured_content={"error": error.code, "detail": error.detail, "fields": error.fields},
        is_error=True,
    )


def answer(text: str, structured: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured.model_dump(mode="json")
    )
