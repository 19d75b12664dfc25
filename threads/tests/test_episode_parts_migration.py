"""Migration 0005: episodes kept before parts were recorded get their parts, numbered in their event's order,
one message per event; an erased event's episodes get none."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from threads.consolidation import thread_consolidate
from threads.erasure import thread_subject_erase
from threads.models import EpisodePart
from threads.tests.test_episodes import LONG

pytestmark = pytest.mark.django_db

migration = importlib.import_module("threads.migrations.0005_episode_parts")


def recorded() -> set[tuple]:
    return set(EpisodePart.objects.values_list("memory_id", "message", "part", "parts"))


def test_the_backfill_numbers_each_events_episodes_in_the_order_of_its_words(
    episodes_on, post_events, private_channel, org
):
    thread = post_events(
        "T-old",
        [("arthur", LONG), ("helper", "Noted.", "assistant"), ("arthur", "Forget this.")],
        place=private_channel,
    )
    thread_consolidate(thread_id=thread.pk)
    forgotten = EpisodePart.objects.get(memory__body__contains="Forget this").memory_id
    thread_subject_erase(
        organisation=org, subject_type="workspace", subject_id="", memory_ids=[str(forgotten)], reason="wrong"
    )
    consolidated = recorded()
    assert len(consolidated) >= 3 and max(parts for *_, parts in consolidated) > 1  # a long event's several parts
    EpisodePart.objects.all().delete()  # as before the migration
    assert not EpisodePart.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute(migration.BACKFILL)
    assert recorded() == consolidated
    assert not EpisodePart.objects.filter(memory_id=forgotten).exists()
