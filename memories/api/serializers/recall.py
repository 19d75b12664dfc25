"""Recall and render: what a turn asks, and the ranked facts and block it is answered with."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from lib.fields import StrictDateField, StrictDateTimeField
from memories.api.serializers.base import (
    TURN_ID_PATTERN,
    OutputSerializer,
    PlaceSerializer,
    StrictSerializer,
    derived,
    written_field,
)
from memories.api.serializers.memories import PLACE_NOTICE_HELP, SourceOutputSerializer
from memories.models import BODY_MAX_CHARS
from memories.recall.query import MODES


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


class RecallRankOutputSerializer(OutputSerializer):
    pinned = derived(serializers.BooleanField, lambda row, context: row["pin_rank"] is not None)
    score = serializers.FloatField(allow_null=True)
    semantic_rank = serializers.IntegerField(allow_null=True)
    lexical_rank = serializers.IntegerField(allow_null=True)
    distance = serializers.FloatField(allow_null=True, help_text="Cosine distance, when ranked by meaning.")
    newer = derived(
        serializers.UUIDField,
        lambda row, context: row.get("newer"),
        allow_null=True,
        help_text="A newer result in this answer, listed just above this one: the asker's own, from another message, "
        "holding mostly the same words of the question. It may update this one. Null when none.",
    )


class RecallSubjectOutputSerializer(OutputSerializer):
    # Whom a recalled fact is about (a recall row annotated with `subject_label`).
    type = serializers.CharField(source="subject_type", help_text="user, candidate or workspace.")
    id = serializers.CharField(
        source="subject_id", help_text="The person's account id, the candidate's id, or empty for the workspace."
    )
    label = serializers.CharField(  # type: ignore[assignment]  # the API field is named `label`
        source="subject_label",
        help_text="As a fact's line names it: the person's handle (else username), the candidate's id, or empty.",
    )


class RecallResultOutputSerializer(OutputSerializer):
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


class RankingOutputSerializer(OutputSerializer):
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


class RecallOutputSerializer(OutputSerializer):
    # A `RecallResult`, annotated with the answer's `notice`.
    results = RecallResultOutputSerializer(many=True, source="rows")
    ranking = RankingOutputSerializer()
    notice = serializers.CharField(
        help_text="What gave way and why (a fallback, or the place record used instead of the call); else empty."
    )


class RenderedFactOutputSerializer(OutputSerializer):
    # One fact's line a render injected, as its injection records it (an `InjectionLine`).
    id = serializers.UUIDField(source="memory_id")
    scope = serializers.CharField()
    section = serializers.CharField()
    tier = serializers.CharField()
    author = serializers.CharField()
    line = serializers.CharField(help_text="The exact line injected.")


class CountOutputSerializer(OutputSerializer):
    scope = serializers.CharField()
    count = serializers.IntegerField()
    reason = serializers.CharField(required=False)


class RenderOutputSerializer(OutputSerializer):
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
