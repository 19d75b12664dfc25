"""Erasure reaches what was derived: a subject's thread events lose their words, and a learned
memory whose only sources were erased is erased too."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection

from memories.models import Memory, MemoryAudit
from memories.signals import erase_derived
from threads.consolidation import thread_consolidate
from threads.erasure import thread_subject_erase
from threads.models import ThreadEvent
from threads.selectors import learned_memories_orphaned_by

pytestmark = pytest.mark.django_db


def consolidate_all(*threads):
    for thread in threads:
        thread_consolidate(thread_id=thread.pk)


def test_erasing_a_user_erases_their_events_and_what_was_learned_only_from_them(
    post_events, private_channel, org, member, second_member
):
    thread = post_events(
        "T-1",
        [
            ("mona", "My timezone is CET"),
            ("max", "Remember that the release is on Monday"),
            ("mona", "Remember that the release is on Monday"),
        ],
        place=private_channel,
    )
    consolidate_all(thread)
    timezone = Memory.objects.get(body="mona's timezone is CET")
    release = Memory.objects.get(body="The release is on Monday")
    assert sorted(e.sequence for e in release.learning.events.all()) == [2]

    counts = thread_subject_erase(
        organisation=org, subject_type="user", subject_id=str(member.pk), memory_ids=[], reason="GDPR request #7"
    )
    assert (counts["thread_events_erased"], counts["derived_memories_erased"]) == (2, 1)
    events = {e.sequence: e for e in ThreadEvent.objects.all()}
    assert events[1].text == "" and events[3].text == "" and events[1].erasure_reason == "GDPR request #7"
    assert events[2].text == "Remember that the release is on Monday"  # max's words stay
    timezone.refresh_from_db()
    release.refresh_from_db()
    assert timezone.redacted_at is not None and timezone.body == "" and timezone.embedding is None
    assert "GDPR request #7" in timezone.redaction_reason
    assert MemoryAudit.objects.filter(memory=timezone, action=MemoryAudit.Action.REDACT).exists()
    # The release fact still has a source with its words (max's event), so it stays.
    assert release.redacted_at is None


def test_a_learned_memory_with_another_live_source_survives_until_its_last_source_goes(
    post_events, dm_with, org, member
):
    thread = post_events("T-1", [("mona", "Remember that the VPN needs a token")], place=dm_with)
    consolidate_all(thread)
    memory = Memory.objects.get()
    event = memory.learning.events.get()
    assert list(learned_memories_orphaned_by(organisation=org, event_ids=[event.pk])) == []
    ThreadEvent.objects.filter(pk=event.pk).update(text="", erased_at=event.occurred_at, erasure_reason="test")
    assert list(learned_memories_orphaned_by(organisation=org, event_ids=[event.pk])) == [memory]


def test_the_events_that_taught_an_erased_memory_lose_their_words(post_events, dm_with, org, member):
    thread = post_events("T-1", [("mona", "My timezone is CET")], place=dm_with)
    consolidate_all(thread)
    memory = Memory.objects.get()
    counts = thread_subject_erase(
        organisation=org, subject_type="candidate", subject_id="cand-1", memory_ids=[str(memory.pk)], reason="request"
    )
    assert counts["thread_events_erased"] == 1
    assert ThreadEvent.objects.get().erased_at is not None


def test_a_dm_with_the_subject_alone_is_erased_whole(post_events, dm_with, org, member):
    thread = post_events("T-1", [("mona", "hi"), ("helper", "Hello Mo, CET noted", "assistant")], place=dm_with)
    consolidate_all(thread)
    thread_subject_erase(organisation=org, subject_type="user", subject_id=str(member.pk), memory_ids=[], reason="r")
    assert set(ThreadEvent.objects.values_list("text", flat=True)) == {""}


def test_erasure_stays_inside_the_organisation(post_events, org, other_org, member, outsider):
    from accounts.services import agent_create

    other_agent, _ = agent_create(organisation=other_org, name="globex-helper")
    post_events(
        "T-1",
        [("otto", "My timezone is CET")],
        place={"channel": "D-otto", "kind": "dm", "people": ["otto"]},
        organisation=other_org,
        by=other_agent,
    )
    counts = thread_subject_erase(
        organisation=org, subject_type="user", subject_id=str(outsider.pk), memory_ids=[], reason="r"
    )
    assert (counts["thread_events_erased"], counts["derived_memories_erased"]) == (0, 0)
    assert ThreadEvent.objects.get().text == "My timezone is CET"


def test_the_subject_erasure_signal_reaches_threads(post_events, dm_with, org, member):
    thread = post_events("T-1", [("mona", "Call me Mo")], place=dm_with)
    consolidate_all(thread)
    counts = erase_derived(
        organisation=org, subject_type="user", subject_id=str(member.pk), memory_ids=[], reason="r", now=None
    )
    assert (counts["thread_events_erased"], counts["derived_memories_erased"]) == (1, 1)


def test_the_database_refuses_an_erased_event_that_keeps_its_words(post_events, dm_with):
    post_events("T-1", [("mona", "hi")], place=dm_with)
    with pytest.raises(IntegrityError), connection.cursor() as cursor:
        cursor.execute("UPDATE threads_threadevent SET erased_at = now(), erasure_reason = 'x'")


def test_the_database_refuses_an_event_in_another_organisations_thread(post_events, dm_with, other_org):
    thread = post_events("T-1", [("mona", "hi")], place=dm_with)
    with pytest.raises(IntegrityError), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE threads_threadevent SET organisation_id = %s WHERE thread_id = %s; SET CONSTRAINTS ALL IMMEDIATE",
            [other_org.pk, thread.pk],
        )
