"""The answers' rows are read by a plan made once per serializer class (`lib.hot_path.represented`): the same
answer, field for field, as DRF's own `Serializer.to_representation`, which each test runs as the control."""

from __future__ import annotations

import pytest
from rest_framework import fields as drf_fields
from rest_framework import serializers

from lib.hot_path import FieldsBuiltOnce
from memories.api import serializers as s
from memories.models import Memory
from memories.services import memory_redact
from memories.tests.api.helpers import recall, remember


@pytest.fixture
def drf_reads(monkeypatch):
    """Switch the serializers back to DRF's own row walk; and count `Field.get_attribute` calls meanwhile."""
    counted: dict = {"reads": 0, "names": set()}
    original = drf_fields.Field.get_attribute

    def counting(field, instance):
        counted["reads"] += 1
        counted["names"].add(field.field_name)
        return original(field, instance)

    monkeypatch.setattr(drf_fields.Field, "get_attribute", counting)

    def use_drf():
        monkeypatch.setattr(FieldsBuiltOnce, "to_representation", serializers.Serializer.to_representation)

    counted["use_drf"] = use_drf
    return counted


def test_a_recall_answer_is_the_same_field_for_field_and_reads_no_field_by_drfs_walk(
    agent_api, general, make_memory, drf_reads
):
    make_memory(body="Tea is served at ten", source_ref="msg-1", source_label="the kitchen")
    make_memory(body="Tea in the general channel", scope="channel", scope_ref="C-general", tier="profile")
    make_memory(body="Tea for later", pinned=True)
    drf_reads["reads"] = 0
    planned = recall(agent_api, general, "tea", mode="lexical")
    assert planned.status_code == 200, planned.content
    assert len(planned.json()["results"]) == 3
    # Every present value read by the plan (keys, attributes, whole rows); DRF decides only the optional
    # fields a lexical ranking leaves out.
    assert drf_reads["names"] == {"contextual", "reranker"} and drf_reads["reads"] == 2
    drf_reads["use_drf"]()
    control = recall(agent_api, general, "tea", mode="lexical")
    assert drf_reads["reads"] > 30  # the control: DRF reads each field of each row through get_attribute
    assert planned.content == control.content


def test_a_remember_answer_and_an_erased_memorys_receipt_are_the_same_field_for_field(
    agent_api, general, member, drf_reads
):
    written = remember(agent_api, general, "Lunch is at noon", subject_type="workspace", source_ref="msg-9")
    assert written.status_code == 201, written.content
    memory = Memory.objects.select_related("agent", "written_by").get(pk=written.json()["id"])
    now = memory.created_at
    memory_redact(memory=Memory.objects.get(pk=memory.pk), reason="asked", actor=member)
    erased = Memory.objects.select_related("agent", "written_by").get(pk=memory.pk)
    shown = [
        s.RememberedOutputSerializer(s.Annotated(memory, scope_reason="", notice=""), context={"now": now}).data,
        s.MemoryOutputSerializer(erased, context={"now": now}).data,
    ]
    assert shown[1]["receipt"]["reason"] == "asked" and shown[0]["receipt"] is None
    drf_reads["use_drf"]()
    control = [
        s.RememberedOutputSerializer(s.Annotated(memory, scope_reason="", notice=""), context={"now": now}).data,
        s.MemoryOutputSerializer(erased, context={"now": now}).data,
    ]
    assert shown == control
    assert {key: written.json()[key] for key in ("body", "scope", "source")} == {
        key: control[0][key] for key in ("body", "scope", "source")
    }


class Odd:
    """An object row: a method DRF calls, a missing attribute, and a related row."""

    def __init__(self):
        self.name = "tea"
        self.nothing = None
        self.inner = type("Inner", (), {"label": "kitchen"})()

    def shout(self):
        return self.name.upper()


class EdgeSerializer(FieldsBuiltOnce):
    name = serializers.CharField()
    shout = serializers.CharField()  # a method: DRF calls it
    nothing = serializers.CharField()  # None: answered as None, the field never asked
    label = serializers.CharField(source="inner.label")  # dotted: DRF's walk
    absent = serializers.CharField(required=False)  # missing, not required: left out
    defaulted = serializers.CharField(required=False, default="none given")  # missing, with a default
    nullable = serializers.CharField(required=False, allow_null=True, default=None)
    secret = serializers.CharField(write_only=True)  # never shown
    whole = serializers.SerializerMethodField()

    def get_whole(self, row):
        return type(row).__name__


class Required(FieldsBuiltOnce):
    missing = serializers.CharField()


AS_DICT = {"name": "tea", "shout": "TEA", "nothing": None, "inner": {"label": "kitchen"}}


class ShadowingDict(dict):
    """A mapping whose attribute shadows one of its keys: DRF reads the key."""

    name = "the attribute, not the key"


@pytest.mark.parametrize("row", [Odd(), AS_DICT, ShadowingDict(AS_DICT)])
def test_an_odd_row_is_answered_as_drf_answers_it(row, drf_reads):
    planned = EdgeSerializer(row).data
    assert planned["name"] == "tea" and "absent" not in planned and "secret" not in planned
    assert planned["shout"] == "TEA" and planned["nothing"] is None and planned["label"] == "kitchen"
    assert planned["defaulted"] == "none given"
    with pytest.raises((KeyError, AttributeError)) as refused:
        Required(row).data  # noqa: B018
    drf_reads["use_drf"]()
    assert EdgeSerializer(row).data == planned
    with pytest.raises(type(refused.value)) as control:
        Required(row).data  # noqa: B018
    assert str(control.value) == str(refused.value)  # DRF's message naming the field, either way
