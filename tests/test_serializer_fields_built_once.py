"""On the hot path the API's serializers build their fields once per process (`lib.hot_path.FieldsBuiltOnce`),
and share nothing a request changes: every instance has field objects of its own, bound to it, reading its own
context. Off it, DRF builds them per instance, with the same rules."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework import fields as drf_fields
from rest_framework import serializers

from memories.api import serializers as s
from memories.models import Memory

RECALL = {"question": "tea?", "place": {"channel": "C-general", "kind": "public", "people": ["mona"]}, "limit": 5}


@pytest.fixture
def deep_copies(monkeypatch):
    """How many fields DRF constructs again by deep copy (`Field.__deepcopy__`) while a test runs."""
    counted = {"copies": 0}
    original = drf_fields.Field.__deepcopy__

    def counting(field, memo):
        counted["copies"] += 1
        return original(field, memo)

    monkeypatch.setattr(drf_fields.Field, "__deepcopy__", counting)
    return counted


def every_field(serializer) -> list:
    """Every field object under a serializer: its fields, their children, and nested serializers' fields."""
    found, pending = [], list(serializer.fields.values())
    while pending:
        field = pending.pop()
        found.append(field)
        child = getattr(field, "child", None)
        if isinstance(child, drf_fields.Field):
            pending.append(child)
        if isinstance(field, serializers.Serializer):
            pending.extend(field.fields.values())
    return found


class PlainRecallInput(serializers.Serializer):
    question = serializers.CharField()
    place = s.PlaceSerializer()


def test_a_hot_serializer_built_again_constructs_no_field(deep_copies):
    s.RecallInputSerializer(data=RECALL).is_valid(raise_exception=True)  # the class's fields, built once
    s.RecallOutputSerializer  # noqa: B018
    deep_copies["copies"] = 0
    for _ in range(3):
        serializer = s.RecallInputSerializer(data=RECALL)
        assert serializer.is_valid(), serializer.errors
    assert deep_copies["copies"] == 0
    # Positive control: DRF's own serializer deep-copies its declared fields on every instance.
    PlainRecallInput(data={"question": "tea?"}).fields  # noqa: B018
    assert deep_copies["copies"] > 0


def test_two_instances_share_no_field_object_and_each_is_its_own_root():
    first, second = s.MemoryDetailOutputSerializer(), s.MemoryDetailOutputSerializer()
    first_fields, second_fields = every_field(first), every_field(second)
    assert len(first_fields) == len(second_fields) > 40
    assert not {id(field) for field in first_fields} & {id(field) for field in second_fields}
    assert all(field.root is first for field in first_fields)
    assert all(field.root is second for field in second_fields)
    # Positive control: a list's item field left shared (a copy not re-parented) is seen, and its wrong root.
    third = s.MemoryDetailOutputSerializer()
    third.fields["chain"].child = first.fields["chain"].child
    assert {id(field) for field in every_field(third)} & {id(field) for field in first_fields}
    assert not all(field.root is third for field in every_field(third))


def test_a_validator_added_to_one_instance_stays_its_own():
    first, second = s.RecallInputSerializer(), s.RecallInputSerializer()
    first.fields["question"].validators.append(lambda value: None)
    assert len(first.fields["question"].validators) == len(second.fields["question"].validators) + 1
    assert len(s.RecallInputSerializer().fields["question"].validators) == len(second.fields["question"].validators)


@pytest.mark.parametrize("hot_path", [True, False], ids=["hot path", "plain"])
def test_input_rules_hold_on_every_instance_built_from_the_prototypes_or_by_drf(hot_path, settings):
    settings.HOT_PATH = hot_path
    for _ in range(3):
        serializer = s.RecallInputSerializer(data={**RECALL, "limit": 1000, "scoep": "x", "question": "a\x07b"})
        assert not serializer.is_valid()
        assert set(serializer.errors) == {"scoep"}  # an unknown field first, by name
        serializer = s.RecallInputSerializer(data={**RECALL, "limit": 1000, "question": "a\x07b"})
        assert not serializer.is_valid()
        assert serializer.errors["limit"] == [f"limit is at most {settings.MEMORY_RECALL_MAX_LIMIT}."]
        assert "control character" in str(serializer.errors["question"][0])
        place = {**RECALL["place"], "channel": "C\u200bgeneral"}
        serializer = s.RecallInputSerializer(data={**RECALL, "place": place})
        assert not serializer.is_valid()
        assert "channel" in serializer.errors["place"]


def memory_shown(now_expired: bool):
    """A memory expiring in an hour, shown as at a `now` after that hour or before it, with a chain of itself."""
    expires = timezone.now() + timedelta(hours=1)
    memory = Memory(id=uuid.uuid4(), body=f"expired={now_expired}", expires_at=expires, scope="workspace")
    now = expires + timedelta(minutes=1) if now_expired else expires - timedelta(minutes=1)
    row = s.Annotated(memory, chain=[memory, memory], injections=[])
    return memory, s.MemoryDetailOutputSerializer(row, context={"now": now}).data


def wrong_answers(memory, data, now_expired: bool) -> list[str]:
    """What in an answer is not this memory's, as at its own `now`."""
    state = "expired" if now_expired else "live"
    wrong = [] if data["id"] == str(memory.id) and data["body"] == memory.body else ["another memory"]
    states = [data["state"], *(version["state"] for version in data["chain"])]
    return wrong + [f"state {found}, not {state}" for found in states if found != state]


def test_concurrent_instances_read_only_their_own_data_and_context():
    problems: list[str] = []
    start = threading.Barrier(8)

    def work(worker: int):
        start.wait()
        for index in range(150):
            now_expired = (worker + index) % 2 == 0
            memory, data = memory_shown(now_expired)
            problems.extend(wrong_answers(memory, data, now_expired))
            question = f"worker {worker} question {index}"
            limit = 1 + index % 40
            serializer = s.RecallInputSerializer(data={**RECALL, "question": question, "limit": limit})
            assert serializer.is_valid(), serializer.errors
            if (serializer.validated_data["question"], serializer.validated_data["limit"]) != (question, limit):
                problems.append(f"worker {worker} read another request's input")

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    # Positive control: the check sees an answer made at another request's `now`.
    memory, data = memory_shown(now_expired=True)
    assert wrong_answers(memory, data, now_expired=False) == ["state expired, not live"] * 3
