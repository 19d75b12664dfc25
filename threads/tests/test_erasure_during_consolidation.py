"""An erasure that lands while consolidation is extracting (outside its transaction) wins: nothing
is learned from the events it erased, though they were read before it."""

from __future__ import annotations

import pytest

from memories.models import Memory
from memories.subjects import subject_erase
from threads.consolidation import thread_consolidate
from threads.extractors.registry import get_extractor
from threads.models import Thread

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_embedder(settings):
    settings.EMBEDDER = "none"  # duplicates are judged on text; loading the model would only cost time


class ErasedMidway:
    """The rules extractor, with the subject's erasure committing during the first extraction."""

    name = "rules"

    def __init__(self, *, organisation, user):
        self.rules = get_extractor("rules")
        self.organisation = organisation
        self.user = user
        self.calls = 0

    def extract(self, events, *, context=()):
        self.calls += 1
        candidates = self.rules.extract(events, context=context)
        if self.calls == 1:
            subject_erase(organisation=self.organisation, subject_type="user", subject_id=str(self.user.pk))
        return candidates


def test_nothing_is_learned_from_events_erased_after_they_were_read(post_events, dm_with, org, member):
    thread = post_events("T-1", [("mona", "My timezone is CET"), ("mona", "Call me Mo")], place=dm_with)
    extractor = ErasedMidway(organisation=org, user=member)
    result = thread_consolidate(thread_id=thread.pk, extractor=extractor)
    # The batch was read again after the erasure: its events are gone, so no place had any to extract.
    assert extractor.calls == 1
    assert result.written == []
    assert not Memory.objects.filter(body__icontains="CET").exists()
    assert not Memory.objects.filter(body__icontains="Mo").exclude(body="").exists()
    assert Thread.objects.get(pk=thread.pk).consolidated_through == 2


def test_positive_control_without_an_erasure_the_same_events_are_learned(post_events, dm_with, org, member):
    thread = post_events("T-1", [("mona", "My timezone is CET"), ("mona", "Call me Mo")], place=dm_with)
    result = thread_consolidate(thread_id=thread.pk, extractor=get_extractor("rules"))
    assert len(result.written) == 2
