"""Migration 0014: person facts said in a DM after it was rebound (made a DM from another kind, or given another
person) are listed and quarantined; a DM never rebound keeps its person's facts."""

from __future__ import annotations

import importlib
import json
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection
from django.utils import timezone

from memories.models import Channel, ChannelMember, Memory
from memories.tests.test_memory_rules import raw_insert
from threads.models import Learning, LearningSource, Thread, ThreadEvent

pytestmark = pytest.mark.django_db

migration = importlib.import_module("memories.migrations.0014_quarantine_rebound_dms")


def place(org, channel: str, person) -> Channel:
    """A DM as its record is today: `person` its one member."""
    record = Channel.objects.create(organisation=org, external_id=channel, kind="dm")
    ChannelMember.objects.create(organisation=org, channel=record, user=person)
    return record


def audited(org, record: Channel, kind_from: str, kind_to: str, at, added=(), removed=()) -> None:
    """A place audit row as the old rules wrote it (raw, so it carries its own time)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memories_placeaudit (organisation_id, channel_id, kind_from, kind_to, added, removed, at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                org.pk,
                record.pk,
                kind_from,
                kind_to,
                json.dumps([str(p.pk) for p in added]),
                json.dumps([str(p.pk) for p in removed]),
                at,
            ],
        )


def person_fact(org, person, body: str, at, **source) -> str:
    return raw_insert(
        org,
        bucket="learned",
        author="model",
        source_kind="message",
        scope="person",
        scope_ref=str(person.pk),
        subject_type="user",
        subject_id=str(person.pk),
        body=body,
        created_at=at,
        **source,
    )


def learned_from(org, memory_id: str, channel: str, person, at) -> None:
    """The fact's learning: one thread event said in `channel`."""
    thread = Thread.objects.create(organisation=org, external_id=f"thread-{channel}")
    event = ThreadEvent.objects.create(
        organisation=org,
        thread=thread,
        sequence=1,
        role="user",
        text="I live in Springfield",
        occurred_at=at,
        place_channel=channel,
        place_kind="dm",
        place_people=[str(person.pk)],
    )
    learning = Learning.objects.create(
        organisation=org, memory_id=memory_id, thread=thread, key="my:city", extractor="rules"
    )
    LearningSource.objects.create(organisation=org, learning=learning, event=event)


@pytest.fixture
def rebound(org, member, second_member):
    """`D-v`, `member`'s DM, made private with `second_member`, then a DM again (now theirs); `D-w`, `member`'s
    DM given to `second_member`; `D-keep`, `second_member`'s DM, never rebound."""
    now = timezone.now()
    day = timedelta(days=1)
    hour = timedelta(hours=1)
    made_private = place(org, "D-v", second_member)
    audited(org, made_private, "", "dm", now - 5 * day, added=[member])
    audited(org, made_private, "dm", "private", now - 4 * day, added=[second_member], removed=[member])
    audited(org, made_private, "private", "dm", now - 3 * day)
    given = place(org, "D-w", second_member)
    audited(org, given, "", "dm", now - 5 * day, added=[member])
    audited(org, given, "dm", "dm", now - 2 * day, added=[second_member], removed=[member])
    kept = place(org, "D-keep", second_member)
    audited(org, kept, "", "dm", now - 5 * day, added=[second_member])
    rows = {
        "said after": person_fact(org, second_member, "Lives in Springfield", now - hour, source_label="D-v"),
        "learned after": person_fact(org, second_member, "Likes tea", now - hour),
        "given after": person_fact(org, second_member, "Has a dog", now - hour, source_ref="D-w"),
        "said before": person_fact(org, second_member, "Works nights", now - 4 * day - hour, source_label="D-v"),
        "never rebound": person_fact(org, second_member, "Speaks Dutch", now - hour, source_label="D-keep"),
        "no source": person_fact(org, second_member, "Plays chess", now - hour),
    }
    learned_from(org, rows["learned after"], "D-v", second_member, now - 2 * hour)
    return rows


def test_person_facts_said_in_a_rebound_dm_are_listed_and_quarantined(rebound):
    listed: list[str] = []
    assert migration.quarantine(None, SimpleNamespace(connection=connection), out=listed.append) == 3
    wrong = {rebound[name] for name in ("said after", "learned after", "given after")}
    assert {line.split()[2] for line in listed} == wrong
    assert all(line.startswith("quarantined memory ") and "after it was rebound as a DM" in line for line in listed)
    quarantined = {
        str(pk): reason
        for pk, reason in Memory.objects.filter(quarantined_at__isnull=False).values_list("id", "quarantine_reason")
    }
    assert set(quarantined) == wrong
    assert "said in D-w after" in quarantined[rebound["given after"]]


def test_a_dm_never_rebound_and_facts_from_before_the_rebind_keep_their_rows(rebound):
    migration.quarantine(None, SimpleNamespace(connection=connection), out=lambda line: None)
    # The positive control: the same person's facts, from their own DM, before the rebind, or naming no place.
    for name in ("never rebound", "said before", "no source"):
        assert Memory.objects.get(pk=rebound[name]).quarantined_at is None, name
