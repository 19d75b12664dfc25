"""A subject's export and erasure."""

from __future__ import annotations

from rest_framework import serializers

from memories.api.serializers.base import OutputSerializer, StrictSerializer
from memories.api.serializers.memories import MemoryOutputSerializer


class SubjectEraseInputSerializer(StrictSerializer):
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class ExportedPlaceOutputSerializer(OutputSerializer):
    channel = serializers.CharField()
    kind = serializers.CharField()


class ExportedEventOutputSerializer(OutputSerializer):
    thread = serializers.CharField(help_text="The thread's id as its agent gave it.")
    sequence = serializers.IntegerField(help_text="The event's position in its thread, from 1.")
    id = serializers.CharField(help_text="The event's own id as the caller gave it; empty if it had none.")
    role = serializers.CharField(help_text="user, assistant, system or tool.")
    author = serializers.CharField()
    text = serializers.CharField(help_text="Empty once erased.")
    time = serializers.DateTimeField()
    place = ExportedPlaceOutputSerializer()
    erased_at = serializers.DateTimeField(allow_null=True)


class SubjectExportOutputSerializer(OutputSerializer):
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


class SubjectEraseOutputSerializer(OutputSerializer):
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
