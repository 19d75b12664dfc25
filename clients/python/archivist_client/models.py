"""Typed shapes of the API's requests and answers, named as in the committed schema (`openapi.yaml`).

Written by hand and checked against the schema by a test (`tests/test_models_match_the_schema.py`):
every field here is a property of the schema's component of the same name, and every property the
schema marks required is a field here. Answers keep fields a newer server adds (`extra="allow"`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any, Literal, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

PlaceKind = Literal["dm", "private", "public"]
ScopeName = Literal["workspace", "channel", "person"]
TierName = Literal["profile", "log", "note"]
_Model = TypeVar("_Model", bound=BaseModel)


def _schema(name: str) -> Callable[[type[_Model]], type[_Model]]:
    """Names the schema component a model mirrors, as its `schema_name` (the schema test reads it)."""

    def named(model: type[_Model]) -> type[_Model]:
        model.schema_name = name
        return model

    return named


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


@_schema("PlaceRequest")
class Place(BaseModel):
    """Where a turn happens: the channel's id in your chat system, its kind, and the people in it."""

    model_config = ConfigDict(extra="forbid")

    channel: str = Field(max_length=200)
    kind: PlaceKind
    people: list[str] = Field(default_factory=list)


@_schema("SourceOutput")
class Source(_Answer):
    kind: str
    ref: str
    label: str
    run_id: str


@_schema("ReceiptOutput")
class Receipt(_Answer):
    erased_at: datetime
    erased_by: str
    reason: str


@_schema("MemoryOutput")
class Memory(_Answer):
    id: UUID
    state: Literal["live", "expired", "superseded", "erased"]
    body: str
    bucket: str
    scope: ScopeName
    scope_ref: str
    scope_label: str
    subject_type: str
    subject_id: str
    author: str
    written: str
    agent: str | None
    written_by: str | None
    source: Source
    tier: TierName
    pinned: bool
    embedded: bool
    created_at: datetime
    occurred_at: datetime | None
    expires_at: datetime | None
    superseded_by: UUID | None
    receipt: Receipt | None


@_schema("RememberedOutput")
class Remembered(Memory):
    scope_reason: str
    notice: str = ""


@_schema("InjectionUseOutput")
class InjectionUse(_Answer):
    turn_id: str
    at: datetime
    position: int
    section: str
    erased: bool


@_schema("MemoryDetailOutput")
class MemoryDetail(Memory):
    chain: list[Memory]
    injections: list[InjectionUse]


@_schema("RecallRankOutput")
class RecallRank(_Answer):
    pinned: bool
    score: float | None
    semantic_rank: int | None
    lexical_rank: int | None
    distance: float | None
    newer: UUID | None = None  # a newer result above it on the same matter (servers before it omit it)


@_schema("RecallSubjectOutput")
class RecallSubject(_Answer):
    """Whom a recalled fact is about: `user` (id: the account id; label: the handle), `candidate` or `workspace`."""

    type: str
    id: str
    label: str


@_schema("RecallResultOutput")
class RecallResult(_Answer):
    id: UUID
    body: str
    scope: str
    scope_label: str
    author: str
    written: str
    tier: str
    source: Source
    created_at: datetime
    occurred_at: datetime | None
    subject: RecallSubject
    rank: RecallRank


@_schema("RankingOutput")
class Ranking(_Answer):
    requested: str
    used: str
    lists: list[str]
    fusion: str | None
    embedding_model: str | None
    vector_search: str | None
    pinned_first: bool
    limit: int
    contextual: dict[str, Any] | None = None
    reranker: dict[str, Any] | None = None


@_schema("RecallOutput")
class Recalled(_Answer):
    results: list[RecallResult]
    ranking: Ranking
    notice: str = ""


@_schema("RenderedFactOutput")
class RenderedFact(_Answer):
    id: UUID
    scope: str
    section: str
    tier: str
    author: str
    line: str


@_schema("CountOutput")
class Count(_Answer):
    scope: str
    count: int
    reason: str | None = None


@_schema("RenderOutput")
class Rendered(_Answer):
    turn_id: str
    cutoff: date
    text: str
    sha256: str
    facts: list[RenderedFact]
    omissions: list[Count]
    faded: list[Count]
    replayed: bool
    notice: str = ""


@_schema("InjectionLineOutput")
class InjectionLine(_Answer):
    position: int
    id: UUID | None
    block: str
    section: str
    scope: str
    author: str
    tier: str
    line: str
    erased_at: datetime | None


@_schema("InjectionOutput")
class Injection(_Answer):
    turn_id: str
    agent: str | None
    user: str | None
    place: dict[str, Any]
    question: str
    cutoff: date
    created_at: datetime
    fact_ids: list[UUID]
    lines: list[InjectionLine]
    omissions: list[Count]
    faded: list[Count]
    duplicates: list[Count]
    sections: list[dict[str, Any]]
    sha256: str
    render_version: int


@_schema("UnavailableOutput")
class Unavailable(_Answer):
    id: UUID | None
    position: int
    scope: str
    reason: str
    erased_at: datetime


@_schema("ReplayOutput")
class Replay(_Answer):
    turn_id: str
    text: str
    sha256: str
    recorded_sha256: str
    identical: bool
    unavailable: list[Unavailable]
    render_version_matches: bool


@_schema("SubjectExportOutput")
class SubjectExport(_Answer):
    subject_type: str
    subject_id: str
    exported_at: datetime
    count: int
    memories: list[Memory]
    thread_events: list[dict[str, Any]]


@_schema("SubjectEraseOutput")
class SubjectErase(_Answer):
    subject_type: str
    subject_id: str
    erased: int
    already_erased: int
    injection_lines_scrubbed: int
    receipts: list[dict[str, Any]]
    stores: dict[str, int]


@_schema("IngestedEvent")
class IngestedEvent(_Answer):
    index: int
    id: str
    sequence: int | None
    duplicate: bool


@_schema("RefusedEvent")
class RefusedEvent(_Answer):
    """An event refused on its own (a place the caller may not act in, someone not of the organisation)."""

    index: int
    error: dict[str, Any]

    @property
    def fields(self) -> dict[str, list[str]]:
        return self.error.get("fields") or {}


@_schema("IngestOutput")
class Ingested(_Answer):
    thread: str
    accepted: int
    duplicates: int
    refused: int
    events: list[IngestedEvent]
    refusals: list[RefusedEvent]
    consolidated_through: int
    last_sequence: int


@_schema("RecordOutput")
class ClaimRecord(_Answer):
    decision: str
    reason: str
    at: datetime
    steward: str | None
    stance: str | None


@_schema("ClaimOutput")
class Claim(_Answer):
    id: UUID
    body: str
    slug: str
    entity: str | None
    transparency: str
    as_of: date
    evidence_refs: Any
    status: str
    claimed_admission: str
    stance: str | None
    promoted_to: str | None
    superseded_by: UUID | None
    erased: bool
    created_at: datetime
    organisation: str | None
    author: str | None
    history: list[ClaimRecord] = Field(default_factory=list)


@_schema("PersonOutput")
class Person(_Answer):
    """A person of the organisation, from the directory (`PUT /api/v1/people/{handle}`)."""

    id: UUID
    handle: str | None
    username: str | None  # null until the person is invited to sign in
    display_name: str
    can_sign_in: bool
    active: bool
    created_at: datetime


@_schema("PlaceOutput")
class PlaceRecord(_Answer):
    """A place's record: its kind and its members' labels (`PUT /api/v1/places/{channel}`)."""

    channel: str
    kind: PlaceKind
    people: list[str]
    created_at: datetime
    updated_at: datetime


@_schema("BatchItemOutput")
class BatchItem(_Answer):
    """One remember of a batch: `created`, `duplicate` (its idempotency key was seen) or `refused`."""

    index: int
    status: Literal["created", "duplicate", "refused"]
    memory: Remembered | None = None
    error: dict[str, Any] | None = None

    @property
    def fields(self) -> dict[str, list[str]]:
        return (self.error or {}).get("fields") or {}


@_schema("BatchOutput")
class Batch(_Answer):
    created: int
    duplicates: int
    refused: int
    items: list[BatchItem]


# Every answer model, for the test that checks them against the schema.
ANSWERS: tuple[type[BaseModel], ...] = (
    Source,
    Receipt,
    Memory,
    Remembered,
    InjectionUse,
    MemoryDetail,
    RecallRank,
    RecallResult,
    Ranking,
    Recalled,
    RenderedFact,
    Count,
    Rendered,
    InjectionLine,
    Injection,
    Unavailable,
    Replay,
    SubjectExport,
    SubjectErase,
    IngestedEvent,
    RefusedEvent,
    Ingested,
    ClaimRecord,
    Claim,
    Person,
    PlaceRecord,
    BatchItem,
    Batch,
)
