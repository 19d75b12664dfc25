"""Input and output shapes of the agent-turn API.

Inputs are strict: an unknown field is refused by name (a typo such as
`scoep` must not silently write a workspace fact), and so is any field naming
the tenant or the owner, which come from the credentials. Outputs are built by
the output serializers from rows, so the schema documents exactly what is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from accounts.auth import PRINCIPAL_FIELDS, refuse_principal_fields
from accounts.people import DIRECTORY_USERNAME_PREFIX, people_labels
from lib.api.prebuilt_fields import FieldsBuiltOnce
from lib.fenced_block import WHO
from lib.fields import StrictDateField, StrictDateTimeField, harden, json_type_problem
from lib.text import surrogate_path
from memories.models import (
    BODY_MAX_CHARS,
    SOURCE_REF_MAX_CHARS,
    Author,
    Injection,
    Memory,
    Scope,
    SourceKind,
    SubjectType,
    Tier,
)
from memories.places import channel_problem, member_labels
from memories.recall.query import MODES

TURN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$"
MAX_TTL_DAYS = 3650
LONE_SURROGATE = "Holds a lone surrogate (an unpaired \\ud800-\\udfff escape); text must be valid Unicode."


class StrictSerializer(FieldsBuiltOnce):
    """The base of every JSON input: strict about names, types and text, each refusal naming its field.

    - fields it does not know, and fields naming the tenant or owner, are refused by name;
    - a string (or key) holding a lone surrogate, at any depth, is refused by its path;
    - a value of the wrong JSON type is refused, never coerced (`lib.fields`);
    - every text field refuses control characters, and the fields listed in
      `identifier_fields` (ids and names) refuse invisible characters too.
    """

    identifier_fields: tuple[str, ...] = ()
    unknown_field_message = ""

    def prepare_field(self, name: str, field: serializers.Field) -> serializers.Field:
        return harden(field, identifier=name in self.identifier_fields)

    def to_internal_value(self, data):
        if self.parent is None:
            where = surrogate_path(data)
            if where:
                raise serializers.ValidationError({where: [LONE_SURROGATE]})
        if isinstance(data, dict):
            if self.parent is None:
                refuse_principal_fields(data)
            unknown = sorted(set(data) - set(self.fields) - set(PRINCIPAL_FIELDS if self.parent is None else ()))
            if unknown:
                takes = ", ".join(sorted(self.fields))
                message = self.unknown_field_message or f"Unknown field; this request takes {takes}."
                raise serializers.ValidationError({name: [message] for name in unknown})
            wrong = {}
            for name, field in self.fields.items():
                if name in data and not field.read_only:
                    problem = json_type_problem(field, data[name])
                    if problem:
                        wrong[name] = [problem] if isinstance(problem, str) else problem
            if wrong:
                raise serializers.ValidationError(wrong)
        return super().to_internal_value(data)


def refuse_bad_channel(value: str) -> None:
    problem = channel_problem(value)
    if problem:
        raise serializers.ValidationError(problem)


def channel_field(**extra) -> serializers.CharField:
    """A channel id: printable, no slashes, at most 200 characters; refused by name, never trimmed."""
    return serializers.CharField(
        max_length=200,
        trim_whitespace=False,
        validators=[refuse_bad_channel],
        help_text="The channel's id in your chat system: printable, no slash, at most 200 characters.",
        **extra,
    )


def place_kind_field(help_text: str) -> serializers.ChoiceField:
    """A place's kind: dm, private or public, refused by name otherwise."""
    return serializers.ChoiceField(
        choices=["dm", "private", "public"],
        help_text=help_text,
        error_messages={"invalid_choice": "{input!r} is not a place kind; use dm, private or public."},
    )


def people_field(help_text: str, **extra) -> serializers.ListField:
    """The people of a place, by handle or username: at most 500."""
    return serializers.ListField(
        child=serializers.CharField(max_length=150), max_length=500, help_text=help_text, **extra
    )


class PlaceSerializer(StrictSerializer):
    identifier_fields = ("channel", "people")

    channel = channel_field()
    kind = place_kind_field("dm, private or public: decides which scopes may be recalled and written here.")
    people = people_field(
        "Handles or usernames of the people here. The place's record decides who is in it: a DM's one "
        "person, a private channel's members; a public channel is open to the whole organisation. Where "
        "this differs from the record, the record is used and `notice` says so.",
        required=False,
        default=list,
    )


def body_field(**extra) -> serializers.CharField:
    return serializers.CharField(
        max_length=BODY_MAX_CHARS,
        help_text=f"The fact, at most {BODY_MAX_CHARS} characters; refused, never cut. Rendered clamped to 500.",
        error_messages={
            "max_length": f"The body is longer than {BODY_MAX_CHARS} characters; it is refused, never cut.",
            "blank": "A memory needs text; the body is empty or only whitespace.",
        },
        **extra,
    )


class _ProvenanceFields(StrictSerializer):
    identifier_fields: tuple[str, ...] = ("source_ref", "run_id")

    tier = serializers.ChoiceField(choices=Tier.choices, required=False, default=Tier.LOG)
    pinned = serializers.BooleanField(required=False, default=False)
    expires_at = StrictDateTimeField(required=False, help_text="When to stop keeping it; default 90 days.")
    ttl_days = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_TTL_DAYS, help_text="Or: keep it this many days."
    )
    source_kind = serializers.ChoiceField(choices=SourceKind.choices, required=False)
    source_ref = serializers.CharField(max_length=SOURCE_REF_MAX_CHARS, required=False, allow_blank=True, default="")
    source_label = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    run_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")

    def validate_source_kind(self, value: str) -> str:
        # Issue 16: episodes are written by consolidation alone, each linked to its thread event.
        if value == SourceKind.EPISODE:
            raise serializers.ValidationError(
                "source_kind 'episode' is written only by consolidation of thread events; "
                "post the conversation to /api/v1/threads/{thread_id}/events instead."
            )
        return value

    def validate(self, attrs):
        if attrs.get("expires_at") is not None and attrs.get("ttl_days") is not None:
            raise serializers.ValidationError({"ttl_days": ["Give expires_at or ttl_days, not both."]})
        return attrs


class RememberInputSerializer(_ProvenanceFields):
    identifier_fields: tuple[str, ...] = ("source_ref", "run_id", "only_for", "subject_id")

    body = body_field()
    place = PlaceSerializer()
    scope = serializers.ChoiceField(
        choices=Scope.choices, required=False, help_text="Asked-for scope; the narrowest the place allows is used."
    )
    only_for = serializers.CharField(
        max_length=150, required=False, help_text="A username: keep the fact for this person alone, wherever it is."
    )
    subject_type = serializers.ChoiceField(choices=SubjectType.choices, required=False)
    subject_id = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text=(
            "Whom the fact is about, with subject_type: for user, a username of your organisation or an account id "
            "(stored as the account id); for candidate, your own id for the person (e.g. cand-42); empty for "
            "workspace. Omitted, it is the person of the place's person scope."
        ),
    )
    occurred_at = StrictDateTimeField(
        required=False,
        help_text="When what it says happened, if not now; recall filters by it and render dates by it.",
    )


# Seeing follows recall for an agent's writes too: the place is required of agents (`MemoryApi.memory_in_place`).
AGENT_CHANGES_IN_A_PLACE = (
    "The place of the agent's turn: required for agents (400 without it), who change only what they could "
    "recall there (404 otherwise). People need not name one."
)


class SupersedeInputSerializer(_ProvenanceFields):
    body = body_field()
    place = PlaceSerializer(required=False, help_text=AGENT_CHANGES_IN_A_PLACE)
    tier = serializers.ChoiceField(choices=Tier.choices, required=False)
    pinned = serializers.BooleanField(required=False)


class PlaceOnlyInputSerializer(StrictSerializer):
    place = PlaceSerializer(required=False, help_text=AGENT_CHANGES_IN_A_PLACE)


class ForgetInputSerializer(StrictSerializer):
    """A forget's body: why it is forgotten (kept on the receipt), and the place of the turn (required of agents)."""

    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    place = PlaceSerializer(required=False, help_text=AGENT_CHANGES_IN_A_PLACE)


class RecallInputSerializer(StrictSerializer):
    question = serializers.CharField(max_length=BODY_MAX_CHARS, required=False, allow_blank=True, default="")
    place = PlaceSerializer()
    limit = serializers.IntegerField(
        min_value=1,
        max_value=settings.MEMORY_RECALL_MAX_LIMIT,
        required=False,
        default=settings.MEMORY_RECALL_DEFAULT_LIMIT,
        error_messages={"max_value": f"limit is at most {settings.MEMORY_RECALL_MAX_LIMIT}."},
    )
    mode = serializers.ChoiceField(choices=MODES, required=False, default="auto")
    occurred_after = StrictDateTimeField(
        required=False, help_text="Only facts that happened at or after this time (when written, if not known)."
    )
    occurred_before = StrictDateTimeField(
        required=False, help_text="Only facts that happened before this time (when written, if not known)."
    )

    def validate(self, attrs):
        after, before = attrs.get("occurred_after"), attrs.get("occurred_before")
        if after is not None and before is not None and after >= before:
            raise serializers.ValidationError(
                {"occurred_before": ["occurred_before must be later than occurred_after."]}
            )
        return attrs


class RenderInputSerializer(StrictSerializer):
    place = PlaceSerializer()
    question = serializers.CharField(max_length=BODY_MAX_CHARS, required=False, allow_blank=True, default="")
    turn_id = serializers.RegexField(
        TURN_ID_PATTERN,
        help_text="Your turn's id, unique in your organisation: letters, digits and . _ : @ -, at most 200.",
        error_messages={"invalid": "A turn id is letters, digits and . _ : @ -, starting with a letter or digit."},
    )
    cutoff = StrictDateField(required=False, help_text="The day notes fade against; default today (UTC).")


class SubjectEraseInputSerializer(StrictSerializer):
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


# --- Outputs ----------------------------------------------------------------------
#
# Each output serializer builds the response it documents, from the row it is given (a model, or a
# recall row as a dict): `MemoryOutputSerializer(memory, context={"now": now}).data`.


def derived(field_class: type[serializers.Field], compute: Callable[[Any, dict], Any], **kwargs) -> serializers.Field:
    """A field worked out by `compute(value, context)`, documented as `field_class`; the value is the whole
    row unless `source` names one attribute."""

    def to_representation(self, value):
        return compute(value, self.context)

    kwargs.setdefault("source", "*")
    return type("DerivedField", (field_class,), {"to_representation": to_representation})(**kwargs)


class Annotated:
    """A row with what its answer adds beside the row's own fields (a remember's scope reason, a read's chain)."""

    def __init__(self, row, **extra):
        self._row = row
        self.__dict__.update(extra)

    def __getattr__(self, name):
        return getattr(self._row, name)


def memory_state(memory, now) -> str:
    if memory.redacted_at is not None:
        return "erased"
    if memory.superseded_by_id is not None:
        return "superseded"
    if memory.expires_at is not None and memory.expires_at <= now:
        return "expired"
    return "live"


def written_field(**kwargs) -> serializers.Field:
    """How its author wrote a fact, in words: noted by a person, or inferred by an agent."""
    return derived(serializers.CharField, lambda author, context: WHO.get(author, ""), source="author", **kwargs)


class SourceOutputSerializer(FieldsBuiltOnce):
    kind = serializers.CharField(source="source_kind")
    ref = serializers.CharField(source="source_ref")
    label = serializers.CharField(source="source_label")  # type: ignore[assignment]  # the API field is named `label`
    run_id = serializers.CharField(source="source_run_id")


class ReceiptOutputSerializer(FieldsBuiltOnce):
    # Who erased a memory, when and why; null while it is not erased.
    erased_at = serializers.DateTimeField(source="redacted_at")
    erased_by = serializers.CharField(
        source="redacted_by_label", help_text="Who erased it, e.g. user:mona or agent:helper."
    )
    reason = serializers.CharField(source="redaction_reason")
    versions = serializers.IntegerField(
        source="chain_versions",
        required=False,
        help_text="On the answer to a forget: how many versions the memory had; all are forgotten.",
    )
    versions_erased_now = serializers.IntegerField(
        source="forgotten_versions",
        required=False,
        help_text="On the answer to a forget: how many of them this request erased.",
    )

    def to_representation(self, memory):
        return super().to_representation(memory) if memory.redacted_at is not None else None


class MemoryOutputSerializer(FieldsBuiltOnce):
    # A memory as the API shows it; an erased one shows its receipt and nothing of what it said. Its context's `now`
    # decides whether it has expired.
    id = serializers.UUIDField()
    state = derived(
        serializers.ChoiceField,
        lambda memory, context: memory_state(memory, context.get("now") or timezone.now()),
        choices=["live", "expired", "superseded", "erased"],
    )
    body = serializers.CharField(help_text="Empty once erased.")
    bucket = serializers.CharField()
    scope = serializers.ChoiceField(choices=Scope.choices)
    scope_ref = serializers.CharField(help_text="The channel id, or the person's account id.")
    scope_label = serializers.CharField()
    subject_type = serializers.ChoiceField(choices=SubjectType.choices)
    subject_id = serializers.CharField()
    author = serializers.ChoiceField(choices=Author.choices)
    written = written_field(help_text="noted by a person, or inferred by an agent")
    agent = serializers.CharField(source="agent.name", allow_null=True)
    written_by = serializers.CharField(source="written_by.username", allow_null=True)
    source = SourceOutputSerializer(source="*")  # type: ignore[assignment]  # the API field is named `source`
    tier = serializers.ChoiceField(choices=Tier.choices)
    pinned = serializers.BooleanField()
    embedded = derived(
        serializers.BooleanField,
        lambda memory, context: memory.embedding_model != "" and memory.redacted_at is None,
    )
    created_at = serializers.DateTimeField()
    occurred_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    superseded_by = serializers.UUIDField(source="superseded_by_id", allow_null=True)
    receipt = ReceiptOutputSerializer(source="*", allow_null=True)


PLACE_NOTICE_HELP = (
    "Where the place's record differs from what the call said: the record was used, and this names the "
    "endpoint that changes it. Empty when they agree."
)


def remembered(memory: Memory, extra: dict) -> Annotated:
    """A written memory with what remember's answer adds: why the scope differs, and the place's notice."""
    return Annotated(memory, scope_reason=extra.get("scope_reason", ""), notice=extra.get("notice", ""))


class RememberedOutputSerializer(MemoryOutputSerializer):
    scope_reason = serializers.CharField(help_text="Why the scope used differs from the one asked for; empty if not.")
    notice = serializers.CharField(help_text=PLACE_NOTICE_HELP)


class InjectionUseOutputSerializer(FieldsBuiltOnce):
    turn_id = serializers.CharField(source="injection.turn_id")
    at = serializers.DateTimeField(source="injection.created_at")
    position = serializers.IntegerField()
    section = serializers.CharField()
    erased = derived(serializers.BooleanField, lambda line, context: line.erased_at is not None)


class MemoryDetailOutputSerializer(MemoryOutputSerializer):
    # Annotated with `chain` (the versions the viewer may see) and `injections` (injection lines).
    chain = MemoryOutputSerializer(many=True, help_text="Every version, oldest to newest, this one included.")
    injections = InjectionUseOutputSerializer(many=True, help_text="Turns it was injected into, newest first.")


class RecallRankOutputSerializer(FieldsBuiltOnce):
    pinned = derived(serializers.BooleanField, lambda row, context: row["pin_rank"] is not None)
    score = serializers.FloatField(allow_null=True)
    semantic_rank = serializers.IntegerField(allow_null=True)
    lexical_rank = serializers.IntegerField(allow_null=True)
    distance = serializers.FloatField(allow_null=True, help_text="Cosine distance, when ranked by meaning.")


class RecallSubjectOutputSerializer(FieldsBuiltOnce):
    # Whom a recalled fact is about (a recall row annotated with `subject_label`).
    type = serializers.CharField(source="subject_type", help_text="user, candidate or workspace.")
    id = serializers.CharField(
        source="subject_id", help_text="The person's account id, the candidate's id, or empty for the workspace."
    )
    label = serializers.CharField(  # type: ignore[assignment]  # the API field is named `label`
        source="subject_label",
        help_text="As a fact's line names it: the person's handle (else username), the candidate's id, or empty.",
    )


class RecallResultOutputSerializer(FieldsBuiltOnce):
    # One recall row (a dict).
    id = serializers.UUIDField(help_text="The memory's id: read, correct, pin or forget it by this.")
    body = serializers.CharField(help_text="The fact's text, as written.")
    scope = serializers.CharField(help_text="workspace, channel or person: who the fact is recalled for.")
    scope_label = serializers.CharField(help_text="The scope's place or person as people name it.")
    author = serializers.CharField(help_text="person or model: who wrote it.")
    written = written_field()
    tier = serializers.CharField(help_text="profile, log or note.")
    source = SourceOutputSerializer(source="*")  # type: ignore[assignment]  # the API field is named `source`
    created_at = serializers.DateTimeField()
    occurred_at = serializers.DateTimeField(allow_null=True, help_text="When what it records happened, if known.")
    subject = RecallSubjectOutputSerializer(source="*", help_text="Whom the fact is about.")
    rank = RecallRankOutputSerializer(source="*")


class RankingOutputSerializer(FieldsBuiltOnce):
    requested = serializers.CharField()
    used = serializers.CharField()
    lists = serializers.ListField(child=serializers.CharField())
    fusion = serializers.CharField(allow_null=True)
    embedding_model = serializers.CharField(allow_null=True)
    vector_search = serializers.CharField(allow_null=True, help_text="exact, hnsw, or exact (hnsw fallback)")
    pinned_first = serializers.BooleanField()
    limit = serializers.IntegerField()
    contextual = serializers.DictField(
        required=False,
        help_text="When contextual ranking was used: candidates, lexical scoring, fusion, context and cues.",
    )
    reranker = serializers.DictField(required=False, help_text="When an HTTP reranker ordered the results.")


class RecallOutputSerializer(FieldsBuiltOnce):
    # A `RecallResult`, annotated with the answer's `notice`.
    results = RecallResultOutputSerializer(many=True, source="rows")
    ranking = RankingOutputSerializer()
    notice = serializers.CharField(
        help_text="What gave way and why (a fallback, or the place record used instead of the call); else empty."
    )


class RenderedFactOutputSerializer(FieldsBuiltOnce):
    # One fact's line a render injected, as its injection records it (an `InjectionLine`).
    id = serializers.UUIDField(source="memory_id")
    scope = serializers.CharField()
    section = serializers.CharField()
    tier = serializers.CharField()
    author = serializers.CharField()
    line = serializers.CharField(help_text="The exact line injected.")


class CountOutputSerializer(FieldsBuiltOnce):
    scope = serializers.CharField()
    count = serializers.IntegerField()
    reason = serializers.CharField(required=False)


class RenderOutputSerializer(FieldsBuiltOnce):
    # A `RenderOutput`, annotated with the place's `notice`.
    turn_id = serializers.CharField(source="injection.turn_id")
    cutoff = serializers.DateField(source="injection.cutoff")
    text = serializers.CharField(help_text="The fenced block, or empty when there is nothing to inject.")
    sha256 = serializers.CharField(source="injection.text_sha256")
    facts = RenderedFactOutputSerializer(many=True)
    omissions = CountOutputSerializer(many=True)
    faded = CountOutputSerializer(many=True)
    replayed = serializers.BooleanField(help_text="True when this turn id was rendered before: the recorded block.")
    notice = serializers.CharField(help_text=PLACE_NOTICE_HELP)


class InjectionLineOutputSerializer(FieldsBuiltOnce):
    position = serializers.IntegerField()
    id = serializers.UUIDField(source="memory_id", allow_null=True)
    block = serializers.CharField()
    section = serializers.CharField()
    scope = serializers.CharField()
    author = serializers.CharField()
    tier = serializers.CharField()
    line = serializers.CharField(help_text="Empty once the fact was erased.")
    erased_at = serializers.DateTimeField(allow_null=True)


def injection_place(injection: Injection, context: dict) -> dict:
    return {
        "channel": injection.place_channel,
        "kind": injection.place_kind,
        "people": people_labels(organisation=injection.organisation, ids=injection.place_people or []),
    }


class InjectionOutputSerializer(FieldsBuiltOnce):
    turn_id = serializers.CharField()
    agent = serializers.CharField(source="agent.name", allow_null=True)
    user = serializers.CharField(source="user.username", allow_null=True)
    place = derived(serializers.DictField, injection_place)
    question = serializers.CharField()
    cutoff = serializers.DateField()
    created_at = serializers.DateTimeField()
    fact_ids = serializers.ListField(child=serializers.UUIDField())
    lines = InjectionLineOutputSerializer(many=True)  # the model keeps a record's lines in position order
    omissions = CountOutputSerializer(many=True)
    faded = CountOutputSerializer(many=True)
    duplicates = CountOutputSerializer(many=True)
    sections = serializers.ListField(child=serializers.DictField())
    sha256 = serializers.CharField(source="text_sha256")
    render_version = serializers.IntegerField()


class UnavailableOutputSerializer(FieldsBuiltOnce):
    id = serializers.UUIDField(allow_null=True, help_text="The fact's memory; null once its row is purged.")
    position = serializers.IntegerField(help_text="The line's position in the recorded block.")
    scope = serializers.CharField()
    reason = serializers.CharField(help_text="When it was erased, by whom and why.")
    erased_at = serializers.DateTimeField()


class ReplayOutputSerializer(FieldsBuiltOnce):
    # A `memories.turns.injections.Replay`.
    turn_id = serializers.CharField()
    text = serializers.CharField(help_text="The block composed again from the recorded lines.")
    sha256 = serializers.CharField(help_text="SHA-256 of `text`.")
    recorded_sha256 = serializers.CharField(help_text="SHA-256 of the block as it was injected.")
    identical = serializers.BooleanField(help_text="The two digests agree: the prompt is rebuilt byte for byte.")
    unavailable = UnavailableOutputSerializer(many=True, help_text="Facts that can no longer be shown, and why.")
    render_version_matches = serializers.BooleanField()


class ExportedPlaceOutputSerializer(FieldsBuiltOnce):
    channel = serializers.CharField()
    kind = serializers.CharField()


class ExportedEventOutputSerializer(FieldsBuiltOnce):
    thread = serializers.CharField(help_text="The thread's id as its agent gave it.")
    sequence = serializers.IntegerField(help_text="The event's position in its thread, from 1.")
    id = serializers.CharField(help_text="The event's own id as the caller gave it; empty if it had none.")
    role = serializers.CharField(help_text="user, assistant, system or tool.")
    author = serializers.CharField()
    text = serializers.CharField(help_text="Empty once erased.")
    time = serializers.DateTimeField()
    place = ExportedPlaceOutputSerializer()
    erased_at = serializers.DateTimeField(allow_null=True)


class SubjectExportOutputSerializer(FieldsBuiltOnce):
    subject_type = serializers.CharField()
    subject_id = serializers.CharField()
    exported_at = serializers.DateTimeField()
    count = serializers.IntegerField()
    memories = MemoryOutputSerializer(many=True, help_text="Oldest first, receipts included.")
    thread_events = ExportedEventOutputSerializer(
        many=True,
        help_text="The thread events an erasure of this subject would erase: what they wrote, their DMs alone, "
        "and the events that taught their memories.",
    )


class SubjectEraseOutputSerializer(FieldsBuiltOnce):
    subject_type = serializers.CharField()
    subject_id = serializers.CharField()
    erased = serializers.IntegerField(help_text="Memories erased by this call.")
    already_erased = serializers.IntegerField(help_text="Memories that were erased before; their receipts stay.")
    injection_lines_scrubbed = serializers.IntegerField(help_text="Lines of recorded injections emptied.")
    receipts = serializers.ListField(
        child=serializers.DictField(),
        help_text="The receipts of the subject's memories: who erased each, when and why.",
    )
    stores = serializers.DictField(
        child=serializers.IntegerField(),
        help_text=(
            "What was emptied in each store: memories (rows about the subject, receipts kept), vectors, "
            "injection_lines, thread_events, derived_memories (learned only from erased words), learning_keys, "
            "injection_questions (questions of turns that showed the subject's rows or were in a DM with them), "
            "provenance (erased rows whose source ref, label, run id or person-scope label was emptied), "
            "names (person records whose display name or first and last name were emptied)."
        ),
    )


# --- Batch remember -------------------------------------------------------------------

BATCH_MAX_ITEMS = 100


class BatchItemInputSerializer(RememberInputSerializer):
    idempotency_key = serializers.RegexField(
        r"^[\x21-\x7e]{1,200}$",
        required=False,
        help_text="This item's own Idempotency-Key: an item sent again with it is answered `duplicate`.",
        error_messages={"invalid": "An idempotency key is 1 to 200 visible ASCII characters."},
    )


class BatchInputSerializer(StrictSerializer):
    # Each item is checked on its own (a refusal answers that item), so here they are only objects.
    items = serializers.ListField(
        child=serializers.DictField(),
        min_length=1,
        max_length=BATCH_MAX_ITEMS,
        help_text=f"1 to {BATCH_MAX_ITEMS} remember requests, each as `POST /api/v1/memories` takes it.",
        error_messages={
            "min_length": "Send at least one item.",
            "max_length": f"At most {BATCH_MAX_ITEMS} items per call; send the rest in another.",
        },
    )


class BatchErrorOutputSerializer(FieldsBuiltOnce):
    error = serializers.CharField()
    detail = serializers.CharField()
    fields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))  # type: ignore[assignment]  # the error shape's `fields`


@dataclass(frozen=True)
class BatchItem:
    """One item's answer: its memory (`remembered`) once written, or the error that refused it."""

    index: int
    status: str  # created, duplicate or refused
    memory: Annotated | None = None
    error: dict | None = None


class BatchItemOutputSerializer(FieldsBuiltOnce):
    index = serializers.IntegerField(help_text="The item's position in `items`, from 0.")
    status = serializers.ChoiceField(choices=["created", "duplicate", "refused"])
    memory = RememberedOutputSerializer(allow_null=True, help_text="The memory written (or first written).")
    error = BatchErrorOutputSerializer(allow_null=True, help_text="Why the item was refused, in the API's error shape.")


def status_count(status: str) -> Callable[[list[BatchItem], dict], int]:
    return lambda items, context: sum(item.status == status for item in items)


class BatchOutputSerializer(FieldsBuiltOnce):
    # A batch's answer, from its items' `BatchItem`s in order.
    created = derived(serializers.IntegerField, status_count("created"))
    duplicates = derived(serializers.IntegerField, status_count("duplicate"))
    refused = derived(serializers.IntegerField, status_count("refused"))
    items = BatchItemOutputSerializer(many=True, source="*")


# --- People and places: the directory ------------------------------------------------


class PersonInputSerializer(StrictSerializer):
    display_name = serializers.CharField(
        max_length=200,
        allow_blank=True,
        required=False,
        default="",
        help_text="How the person is named in rendered blocks and on pages, at most 200 characters.",
    )


def signs_in_as(user, context: dict) -> str | None:
    # A person the directory made has a placeholder username until they are invited.
    return None if user.username.startswith(DIRECTORY_USERNAME_PREFIX) else user.username


class PersonOutputSerializer(FieldsBuiltOnce):
    # A person of the directory, from their `Membership`.
    id = serializers.UUIDField(
        source="user.pk", help_text="The person's one stable id: what scopes, subjects and audits store."
    )
    handle = serializers.CharField(allow_null=True, help_text="The integration's id for them, if it made them.")
    username = derived(
        serializers.CharField,
        signs_in_as,
        source="user",
        allow_null=True,
        help_text="What they sign in with; null until invited.",
    )
    display_name = serializers.CharField()
    can_sign_in = derived(
        serializers.BooleanField, lambda user, context: user.is_active and user.has_usable_password(), source="user"
    )
    active = serializers.BooleanField(source="user.is_active")
    created_at = serializers.DateTimeField()


class PlaceInputSerializer(StrictSerializer):
    kind = place_kind_field("dm (one person), private (its members only) or public (open to the organisation).")
    people = people_field("Handles or usernames of everyone in the place: its whole membership (exactly one for a DM).")


class PlaceOutputSerializer(FieldsBuiltOnce):
    # A place's record (`memories.places.PlaceRecord`).
    channel = serializers.CharField(source="channel.external_id")
    kind = serializers.CharField(source="channel.kind")
    people = derived(
        serializers.ListField,
        lambda record, context: member_labels(record),
        child=serializers.CharField(),
        help_text="Members, by handle or username.",
    )
    created_at = serializers.DateTimeField(source="channel.created_at")
    updated_at = serializers.DateTimeField(source="channel.updated_at")
