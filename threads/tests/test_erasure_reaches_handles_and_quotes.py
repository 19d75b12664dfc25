"""A person's erasure reaches what threads hold of them beyond their record: events posted under their handle
before they had one (with those events' episodes and the injected lines that quoted them), and a learned
fact that quotes them though another source keeps its words."""

from __future__ import annotations

import pytest
from django.utils import timezone

from accounts.people import person_upsert
from memories.models import InjectionLine, Memory, SourceKind
from memories.subjects import subject_erase, subject_export_document
from memories.tests.api.helpers import render
from threads.consolidation import thread_consolidate
from threads.models import LearningSource, ThreadEvent

pytestmark = pytest.mark.django_db


def test_events_posted_under_their_handle_before_they_had_a_record_are_linked_and_erased(
    episodes_on, post_events, public_channel, agent_api, org
):
    thread = post_events(
        "T-1",
        [
            ("U-nina", "Remember that the badge office opens at nine"),
            ("U-nina", "My parking spot is P-41"),
            ("arthur", "Sure, thanks"),
        ],
        place=public_channel,
    )
    thread_consolidate(thread_id=thread.pk)
    hers = ThreadEvent.objects.filter(author="U-nina")
    assert hers.count() == 2 and not hers.filter(author_user__isnull=False).exists()  # posted with no record
    episodes = Memory.objects.filter(source_kind=SourceKind.EPISODE, source_event__in=hers)
    learned = Memory.objects.filter(learning__sources__event__in=hers, source_kind=SourceKind.THREAD_EVENT)
    assert episodes.count() == 2 and learned.exists()
    assert render(agent_api, public_channel, "turn-1", question="When does the badge office open?").status_code == 200
    quoted = InjectionLine.objects.filter(memory__in=[*episodes, *learned]).exclude(line="")
    assert quoted.exists()  # positive control: the render quoted her words
    nina, _ = person_upsert(organisation=org, handle="U-nina", display_name="Nina")
    export = subject_export_document(
        organisation=org, subject_type="user", subject_id=str(nina.user_id), now=timezone.now()
    )
    assert {event["text"] for event in export["thread_events"]} == {
        "Remember that the badge office opens at nine",
        "My parking spot is P-41",
    }

    answer = subject_erase(organisation=org, subject_type="user", subject_id=str(nina.user_id), reason="asked")

    assert set(hers.values_list("author_user_id", "text")) == {(nina.user_id, "")}
    assert set(hers.values_list("author", flat=True)) == {"U-nina"}  # the handle stays
    assert not episodes.filter(redacted_at__isnull=True).exists() and not learned.filter(redacted_at__isnull=True)
    assert not InjectionLine.objects.filter(memory__in=[*episodes, *learned]).exclude(line="").exists()
    assert ThreadEvent.objects.get(author="arthur").text == "Sure, thanks"  # someone else's words stay
    assert answer["stores"]["thread_events"] == 2


def _taught_also_by(memory: Memory, event: ThreadEvent) -> None:
    """A second source for a learned fact, as the LLM extractor records when it cites two events."""
    LearningSource.objects.create(organisation_id=memory.organisation_id, learning=memory.learning, event=event)


def test_a_learned_fact_with_another_live_source_stays_unless_it_quotes_them(post_events, private_channel, org, member):
    thread = post_events(
        "T-1",
        [
            ("mona", "Remember that the release is on Monday"),
            ("mona", "Remember that the oolong tasting is on Friday"),
            ("max", "Remember that the tasting is on Friday"),
            ("max", "Remember that mona's sister visits in May"),
            ("mona", "My sister visits in May"),
            ("max", "Remember that the release is on Monday"),  # said already: no fact of its own
        ],
        place=private_channel,
    )
    thread_consolidate(thread_id=thread.pk)
    events = {event.sequence: event for event in ThreadEvent.objects.filter(thread=thread)}
    release = Memory.objects.get(body="The release is on Monday")
    tasting = Memory.objects.get(body="The oolong tasting is on Friday")
    sister = Memory.objects.get(body="Mona's sister visits in May")
    _taught_also_by(release, events[6])  # max's words share every word of it
    _taught_also_by(tasting, events[3])  # max never said "oolong": only her message did
    _taught_also_by(sister, events[5])  # max's message names her

    subject_erase(organisation=org, subject_type="user", subject_id=str(member.pk), reason="asked")

    for memory in (release, tasting, sister):
        memory.refresh_from_db()
    assert release.redacted_at is None and release.body == "The release is on Monday"  # today's rule
    assert tasting.redacted_at is not None and tasting.body == ""
    assert sister.redacted_at is not None and sister.body == ""
    assert "quoted erased thread events" in tasting.redaction_reason
