"""Injections: what a turn was shown, line by line, and its replay."""

from __future__ import annotations

from rest_framework import serializers

from accounts.people import people_labels
from memories.api.serializers.base import OutputSerializer, derived
from memories.api.serializers.recall import CountOutputSerializer
from memories.models import Injection


class InjectionLineOutputSerializer(OutputSerializer):
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
    ids = [str(person_id) for person_id in injection.place_people or []]
    labels = people_labels(organisation=injection.organisation, ids=ids)
    return {"channel": injection.place_channel, "kind": injection.place_kind, "people": [labels[i] for i in ids]}


class InjectionOutputSerializer(OutputSerializer):
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


class UnavailableOutputSerializer(OutputSerializer):
    id = serializers.UUIDField(allow_null=True, help_text="The fact's memory; null once its row is purged.")
    position = serializers.IntegerField(help_text="The line's position in the recorded block.")
    scope = serializers.CharField()
    reason = serializers.CharField(help_text="When it was erased, by whom and why.")
    erased_at = serializers.DateTimeField()


class ReplayOutputSerializer(OutputSerializer):
    # A `memories.turns.injections.Replay`.
    turn_id = serializers.CharField()
    text = serializers.CharField(help_text="The block composed again from the recorded lines.")
    sha256 = serializers.CharField(help_text="SHA-256 of `text`.")
    recorded_sha256 = serializers.CharField(help_text="SHA-256 of the block as it was injected.")
    identical = serializers.BooleanField(help_text="The two digests agree: the prompt is rebuilt byte for byte.")
    unavailable = UnavailableOutputSerializer(many=True, help_text="Facts that can no longer be shown, and why.")
    render_version_matches = serializers.BooleanField()
