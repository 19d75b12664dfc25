"""The live-fact caps hold in the one writer (memory_remember), whatever path calls it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.errors import LimitReached
from memories.models import Author, Bucket, Memory, SourceKind
from memories.places import place_recorded
from memories.services import memory_supersede
from memories.tests.api.helpers import remember, session_client
from memories.tests.remembered import remembered

pytestmark = pytest.mark.django_db


def agent_fact(agent, body="A fact", **extra):
    return remembered(
        organisation=agent.organisation,
        bucket=Bucket.LEARNED,
        author=Author.MODEL,
        source_kind=SourceKind.MESSAGE,
        agent=agent,
        body=body,
        **extra,
    )


def test_an_agent_at_its_cap_is_refused_by_the_writer_itself(agent, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 2
    agent_fact(agent, "one")
    agent_fact(agent, "two")
    with pytest.raises(LimitReached, match="forget before remembering"):
        agent_fact(agent, "three")
    assert Memory.objects.filter(agent=agent).count() == 2


def test_a_person_at_their_cap_is_refused_through_the_api_and_nothing_is_written(org, member, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_PERSON = 2
    client = session_client(member)
    dm = {"channel": "D-mona", "kind": "dm", "people": [member.username]}
    place_recorded(organisation=org, **dm)
    assert remember(client, dm, "one").status_code == 201
    assert remember(client, dm, "two").status_code == 201
    response = remember(client, dm, "three")
    assert response.status_code == 409 and response.json()["error"] == "limit_reached"
    assert "You hold 2 live facts" in response.json()["detail"]
    assert Memory.objects.filter(written_by=member).count() == 2


def test_expired_erased_and_corrected_rows_do_not_count(agent, settings, member):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 2
    expired = agent_fact(agent, "old")
    Memory.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(days=1))
    live = agent_fact(agent, "live")
    memory_supersede(memory=live, body="live, corrected", agent=agent)
    agent_fact(agent, "room for one more")  # the expired and the corrected rows left room


def test_correcting_a_live_fact_at_the_cap_is_allowed_it_adds_none(agent, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 1
    fact = agent_fact(agent, "Meets at ten")
    replacement = memory_supersede(memory=fact, body="Meets at eleven", agent=agent)
    assert replacement.body == "Meets at eleven"


def test_correcting_an_expired_fact_at_the_cap_counts_it_brings_one_back(agent, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 1
    expired = agent_fact(agent, "Meets at ten")
    Memory.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(days=1))
    agent_fact(agent, "Lunch at noon")
    expired.refresh_from_db()
    with pytest.raises(LimitReached):
        memory_supersede(memory=expired, body="Meets at eleven", agent=agent)
    assert not Memory.objects.filter(body="Meets at eleven").exists()
