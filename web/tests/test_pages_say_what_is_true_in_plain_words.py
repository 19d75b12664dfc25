"""The pages in a person's words: the conflicts page says what recall does with a pending inference and the
line it came from, the banner links to it, jargon is explained, and the first organisation is explained."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from accounts.models import Membership, Organisation
from accounts.services import user_create
from memories.places import place_for_turn
from memories.recall.query import recall
from memories.turns.writes import RememberRequest, memory_remember_in_place
from threads.consolidation import thread_consolidate
from threads.ingest import thread_events_ingest

pytestmark = pytest.mark.django_db

LINE = "My timezone is PST these days."


def signed_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def pending_conflict(settings, *, org, member, agent, episodes: bool):
    """mona's own fact, then a DM where she says otherwise: a pending conflict, with an episode when kept."""
    settings.THREAD_EPISODES = episodes
    place_for_turn(organisation=org, channel="D-mona", kind="dm", people=["mona"], agent=agent)
    dm = place_for_turn(organisation=org, channel="D-mona", kind="dm", people=["mona"], user=member)
    memory_remember_in_place(RememberRequest(body="My timezone is CET"), organisation=org, resolved=dm, writer=member)
    event = {
        "id": "evt-1",
        "role": "user",
        "author": "mona",
        "text": LINE,
        "time": datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
        "place": {"channel": "D-mona", "kind": "dm", "people": ["mona"]},
    }
    thread, _ = thread_events_ingest(organisation=org, agent=agent, thread_id="T-c", events=[event])
    assert len(thread_consolidate(thread_id=thread.pk).conflicts) == 1
    return dm


def test_the_conflicts_page_says_recall_still_finds_the_line_an_inference_came_from(settings, org, member, agent):
    dm = pending_conflict(settings, org=org, member=member, agent=agent, episodes=True)
    found = [row["body"] for row in recall(organisation=org, place=dm.place, question="timezone", agent=agent).rows]
    assert "My timezone is CET" in found and "mona's timezone is PST" not in " ".join(found)  # the inference: no
    assert any(LINE in body for body in found)  # the line it came from: yes

    browser = signed_in(member)
    listing = browser.get("/me/memories").content.decode()
    assert '<a href="/me/conflicts">Review them</a>' in listing
    page = browser.get("/me/conflicts").content.decode()
    assert "neither recalled nor shown" not in page
    assert "recall still finds it when a question matches it" in page
    assert f"mona: {LINE}" in page and "open it to forget it" in page


def test_without_episodes_the_conflicts_page_names_no_line(settings, org, member, agent):
    dm = pending_conflict(settings, org=org, member=member, agent=agent, episodes=False)
    found = [row["body"] for row in recall(organisation=org, place=dm.place, question="timezone", agent=agent).rows]
    assert found == ["My timezone is CET"]
    page = signed_in(member).get("/me/conflicts").content.decode()
    assert "mona&#x27;s timezone is PST" in page  # the conflict is listed (positive control)
    assert "The line it was inferred from is still kept" not in page


def test_everything_about_me_explains_a_subject_access_request_and_says_no_vector(member):
    page = signed_in(member).get("/me/everything").content.decode()
    assert "if you asked what it holds about you (the law calls that a subject-access request)" in page
    assert "what was made from it to find it by words or by meaning" in page and "vector" not in page


def test_the_organisation_archivist_made_at_its_first_start_is_explained(outsider):
    first = Organisation.objects.create(slug="default", name="Default")
    admin = user_create(username="admin", organisation=first, role=Membership.Role.OWNER, password="pw-admin-123")
    page = signed_in(admin).get("/owners/organisation").content.decode()
    assert 'id="default-organisation"' in page and "made by itself when it first started" in page
    other = signed_in(outsider).get("/owners/organisation").content.decode()
    assert "What an organisation is" in other and 'id="default-organisation"' not in other
