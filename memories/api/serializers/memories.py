"""Memories: remember, supersede, pin and forget inputs, and a memory as answered."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import serializers

from lib.fields import StrictDateTimeField
from memories.api.serializers.base import (
    MAX_TTL_DAYS,
    Annotated,
    OutputSerializer,
    PlaceSerializer,
    StrictSerializer,
    body_field,
    derived,
    memory_state,
    written_field,
)
from memories.models import SOURCE_REF_MAX_CHARS, Author, Memory, Scope, SourceKind, SubjectType, Tier


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
        # Episodes are written by consolidation alone, each linked to its thread event.
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


class SourceOutputSerializer(OutputSerializer):
    kind = serializers.CharField(source="source_kind")
    ref = serializers.CharField(source="source_ref")
    label = serializers.CharField(source="source_label")  # type: ignore[assignment]  # the API field is named `label`
    run_id = serializers.CharField(source="source_run_id")


class ReceiptOutputSerializer(OutputSerializer):
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


class MemoryOutputSerializer(OutputSerializer):
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


class InjectionUseOutputSerializer(OutputSerializer):
    turn_id = serializers.CharField(source="injection.turn_id")
    at = serializers.DateTimeField(source="injection.created_at")
    position = serializers.IntegerField()
    section = serializers.CharField()
    erased = derived(serializers.BooleanField, lambda line, context: line.erased_at is not None)


class MemoryDetailOutputSerializer(MemoryOutputSerializer):
    # Annotated with `chain` (the versions the viewer may see) and `injections` (injection lines).
    chain = MemoryOutputSerializer(many=True, help_text="Every version, oldest to newest, this one included.")
    injections = InjectionUseOutputSerializer(many=True, help_text="Turns it was injected into, newest first.")
