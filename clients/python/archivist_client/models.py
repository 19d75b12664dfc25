"""Typed shapes of the API's requests and answers, named as in the committed schema (`openapi.yaml`).

Written by hand and checked against the schema by a test (`tests/test_models_match_the_schema.py`):
every field here is a property of the schema's component of the same name, and every property the
schema marks required is a field here. Answers keep fields a newer server adds (`extra="allow"`).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

PlaceKind = Literal["dm", "private", "public"]
ScopeName = Literal["workspace", "channel", "person"]
TierName = Literal["profile", "log", "note"]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


class Place(BaseModel):
    """Where a turn happens: the channel's id in your chat system, its kind, and the people in it."""

    model_config = ConfigDict(extra="forbid")
    schema_name: ClassVar[str] = "PlaceRequest"

    channel: str = Field(max_length=200)
    kind: PlaceKind
    people: list[str] = Field(default_factory=list)


class Source(_Answer):
    schema_name: ClassVar[str] = "SourceOutput"
    kind: str
    ref: str
    label: str
    run_id: str


class Receipt(_Answer):
    schema_name: ClassVar[str] = "ReceiptOutput"
    erased_at: datetime
    erased_by: str
    reason: str


class Memory(_Answer):
    schema_name: ClassVar[str] = "MemoryOutput"
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


class Remembered(Memory):
    schema_name: ClassVar[str] = "RememberedOutput"
    scope_reason: str
    notice: str = ""


class InjectionUse(_Answer):
    schema_name: ClassVar[str] = "InjectionUseOutput"
    turn_id: str
    at: datetime
    position: int
    section: str
    erased: bool


class MemoryDetail(Memory):
    schema_name: ClassVar[str] = "MemoryDetailOutput"
    chain: list[Memory]
    injections: list[InjectionUse]


class RecallRank(_Answer):
    schema_name: ClassVar[str] = "RecallRankOutput"
    pinned: bool
    score: float | None
    semantic_rank: int | None
    lexical_rank: int | None
    distance: float | None


class RecallResult(_Answer):
    schema_name: ClassVar[str] = "RecallResultOutput"
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
    rank: RecallRank


class Ranking(_Answer):
    schema_name: ClassVar[str] = "RankingOutput"
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


class Recalled(_Answer):
    schema_name: ClassVar[str] = "RecallOutput"
    results: list[RecallResult]
    ranking: Ranking
    notice: str = ""


class RenderedFact(_Answer):
    schema_name: ClassVar[str] = "RenderedFactOutput"
    id: UUID
    scope: str
    section: str
    tier: str
    author: str
    line: str


class Count(_Answer):
    schema_name: ClassVar[str] = "CountOutput"
    scope: str
    count: int
    reason: str | None = None


class Rendered(_Answer):
    schema_name: ClassVar[str] = "RenderOutput"
    turn_id: str
    cutoff: date
    text: str
    sha256: str
    facts: list[RenderedFact]
    omissions: list[Count]
    faded: list[Count]
    replayed: bool
    notice: str = ""


class InjectionLine(_Answer):
    schema_name: ClassVar[str] = "InjectionLineOutput"
    position: int
    id: UUID | None
    block: str
    section: str
    scope: str
    author: str
    tier: str
    line: str
    erased_at: datetime | None


class Injection(_Answer):
    schema_name: ClassVar[str] = "InjectionOutput"
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


class Unavailable(_Answer):
    schema_name: ClassVar[str] = "UnavailableOutput"
    id: UUID | None
    position: int
    scope: str
    reason: str
    erased_at: datetime


class Replay(_Answer):
    schema_name: ClassVar[str] = "ReplayOutput"
    turn_id: str
    text: str
    sha256: str
    recorded_sha256: str
    identical: bool
    unavailable: list[Unavailable]
    render_version_matches: bool


class SubjectExport(_Answer):
    schema_name: ClassVar[str] = "SubjectExportOutput"
    subject_type: str
    subject_id: str
    exported_at: datetime
    count: int
    memories: list[Memory]
    thread_events: list[dict[str, Any]]


class SubjectErase(_Answer):
    schema_name: ClassVar[str] = "SubjectEraseOutput"
    subject_type: str
    subject_id: str
    erased: int
    already_erased: int
    injection_lines_scrubbed: int
    receipts: list[dict[str, Any]]
    stores: dict[str, int]


class IngestedEvent(_Answer):
    schema_name: ClassVar[str] = "IngestedEvent"
    id: str
    sequence: int | None
    duplicate: bool


class Ingested(_Answer):
    schema_name: ClassVar[str] = "IngestOutput"
    thread: str
    accepted: int
    duplicates: int
    events: list[IngestedEvent]
    consolidated_through: int
    last_sequence: int


class ClaimRecord(_Answer):
    schema_name: ClassVar[str] = "RecordOutput"
    decision: str
    reason: str
    at: datetime
    steward: str | None
    stance: str | None


class Claim(_Answer):
    schema_name: ClassVar[str] = "ClaimOutput"
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


class Person(_Answer):
    """A person of the organisation, from the directory (`PUT /api/v1/people/{handle}`)."""

    schema_name: ClassVar[str] = "PersonOutput"
    id: UUID
    handle: str | None
    username: str
    display_name: str
    can_sign_in: bool
    active: bool
    created_at: datetime


class PlaceRecord(_Answer):
    """A place's record: its kind and its members' labels (`PUT /api/v1/places/{channel}`)."""

    schema_name: ClassVar[str] = "PlaceOutput"
    channel: str
    kind: PlaceKind
    people: list[str]
    created_at: datetime
    updated_at: datetime


class BatchItem(_Answer):
    """One remember of a batch: `created`, `duplicate` (its idempotency key was seen) or `refused`."""

    schema_name: ClassVar[str] = "BatchItemOutput"
    index: int
    status: Literal["created", "duplicate", "refused"]
    memory: Remembered | None = None
    error: dict[str, Any] | None = None

    @property
    def fields(self) -> dict[str, list[str]]:
        return (self.error or {}).get("fields") or {}


class Batch(_Answer):
    schema_name: ClassVar[str] = "BatchOutput"
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
    Ingested,
    ClaimRecord,
    Claim,
    Person,
    PlaceRecord,
    BatchItem,
    Batch,
)
