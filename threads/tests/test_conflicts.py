"""Conflicts are shown, not buried (issue 16): an inference contradicting a person's own fact never
replaces it; it waits, unrecalled and unrendered, until the person accepts or dismisses it."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from memories.models import Bucket, Memory, MemoryAudit
from memories.places import place_for_turn
from memories.recall.query import recall
from memories.turns.writes import RememberRequest, memory_remember_in_place
from memories.writer import live_facts
from threads.conflicts import conflict_accept, conflict_dismiss, pending_conflicts, user_fact_keyed
from threads.consolidation import thread_consolidate
from threads.models import Learning

pytestmark = pytest.mark.django_db


@pytest.fixture
def dm(org, member, agent):
    # An agent with the directory right records the DM at first sight; a person never creates a place.
    place_for_turn(organisation=org, channel="D-mona", kind="dm", people=[member.username], agent=agent)
    return place_for_turn(organisation=org, channel="D-mona", kind="dm", people=[member.username], user=member)


@pytest.fixture
def own_fact(org, member, dm):
    memory, _ = memory_remember_in_place(
        RememberRequest(body="My timezone is CET"), organisation=org, resolved=dm, writer=member
    )
    return memory


@pytest.fixture
def inferred(own_fact, post_events, dm_with):
    thread = post_events("T-c", [("mona", "My timezone is PST these days.")], place=dm_with)
    result = thread_consolidate(thread_id=thread.pk)
    assert len(result.conflicts) == 1 and result.written == []
    return Memory.objects.get(pk=result.conflicts[0])


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("My timezone is CET", "my:timezone"),
        ("mona's timezone is CET", "my:timezone"),  # the sentence consolidation itself writes
        ("Call me Mo", "called"),
        ("mona wants to be called Mo", "called"),
        ("I prefer tea", "prefers:tea"),
    ],
)
def test_a_persons_own_fact_gets_the_key_consolidation_computes(body, key, org, member, dm):
    assert user_fact_keyed(body, "mona").key == key
    memory, _ = memory_remember_in_place(RememberRequest(body=body), organisation=org, resolved=dm, writer=member)
    assert Learning.objects.get(memory=memory).key == key  # written with it


def test_a_fact_with_no_known_shape_has_no_key(org, member, dm):
    memory, _ = memory_remember_in_place(
        RememberRequest(body="Likes long walks"), organisation=org, resolved=dm, writer=member
    )
    assert not Learning.objects.filter(memory=memory).exists()


def test_an_inference_contradicting_the_persons_fact_waits_unrecalled_and_uncounted(
    inferred, own_fact, org, member, agent, dm
):
    learning = inferred.learning
    assert (learning.conflict, learning.conflicts_with_id) == (Learning.Conflict.PENDING, own_fact.pk)
    assert inferred.bucket == Bucket.LEARNED and inferred.superseded_by_id == own_fact.pk
    assert Memory.objects.get(pk=own_fact.pk).superseded_by_id is None  # theirs is untouched
    found = [row["body"] for row in recall(organisation=org, place=dm.place, question="timezone", agent=agent).rows]
    assert found == ["My timezone is CET"]  # only the person's own fact
    assert live_facts(organisation_id=agent.organisation_id, agent=agent, now=timezone.now()) == 0
    assert list(pending_conflicts(organisation=org, subject_ids=[member.pk])) == [learning]


def test_render_shows_the_persons_own_fact_never_both(inferred, agent_api, dm_with):
    response = agent_api.post(
        "/api/v1/render", {"place": dm_with, "turn_id": "t-1", "question": "timezone?"}, format="json"
    )
    text = response.json()["text"]
    assert "My timezone is CET" in text and "PST" not in text


def test_the_same_inference_again_is_not_a_second_conflict(inferred, post_events, dm_with):
    thread = post_events("T-c2", [("mona", "My timezone is PST these days.")], place=dm_with)
    result = thread_consolidate(thread_id=thread.pk)
    assert result.conflicts == [] and result.duplicates == 1


def test_an_inference_agreeing_with_the_persons_fact_is_a_repeat(own_fact, post_events, dm_with):
    thread = post_events("T-same", [("mona", "My timezone is CET.")], place=dm_with)
    result = thread_consolidate(thread_id=thread.pk)
    assert result.conflicts == [] and result.written == [] and result.duplicates == 1


def test_accepting_lets_the_inference_supersede_the_persons_fact(inferred, own_fact, org, member, agent, dm):
    learning = inferred.learning
    replacement = conflict_accept(organisation=org, learning_id=learning.pk, actor=member)
    assert replacement.body == "mona's timezone is PST" and replacement.bucket == Bucket.LEARNED
    assert Memory.objects.get(pk=own_fact.pk).superseded_by_id == replacement.pk
    assert replacement.learning.key == "my:timezone"
    assert [s.event_id for s in replacement.learning.sources.all()] == [s.event_id for s in learning.sources.all()]
    learning.refresh_from_db()
    assert learning.conflict == Learning.Conflict.ACCEPTED and learning.conflict_decided_by == member
    found = [row["body"] for row in recall(organisation=org, place=dm.place, question="timezone", agent=agent).rows]
    assert found == ["mona's timezone is PST"]
    with pytest.raises(Exception, match="already decided"):
        conflict_dismiss(organisation=org, learning_id=learning.pk, actor=member)


def test_dismissing_forgets_the_inference_with_its_receipt(inferred, own_fact, org, member):
    learning = inferred.learning
    conflict_dismiss(organisation=org, learning_id=learning.pk, actor=member)
    inferred.refresh_from_db()
    assert inferred.redacted_at is not None and inferred.body == "" and "dismissed by mona" in inferred.redaction_reason
    assert MemoryAudit.objects.filter(memory=inferred, action="redact").exists()
    assert Memory.objects.get(pk=own_fact.pk).superseded_by_id is None and Memory.objects.get(pk=own_fact.pk).body
    assert not pending_conflicts(organisation=org, subject_ids=[member.pk]).exists()


def test_learned_over_learned_still_supersedes(post_events, dm_with):
    first = post_events("T-l", [("mona", "My timezone is CET")], place=dm_with)
    thread_consolidate(thread_id=first.pk)
    post_events("T-l", [("mona", "My timezone is PST")], place=dm_with)
    result = thread_consolidate(thread_id=first.pk)
    assert len(result.superseded) == 1 and result.conflicts == []


def test_the_person_sees_accepts_and_dismisses_on_their_pages(inferred, own_fact, member, second_member, org):
    browser = Client()
    browser.force_login(member)
    assert '<a href="/me/conflicts">Review them</a>' in browser.get("/me/memories").content.decode()
    page = browser.get("/me/conflicts").content.decode()
    assert "inferred <q" in page and "mona&#x27;s timezone is PST" in page and "My timezone is CET" in page
    learning = inferred.learning
    # Someone else cannot decide it (a 404, as for any row they may not see).
    other = Client()
    other.force_login(second_member)
    assert other.post(f"/me/conflicts/{learning.pk}/dismiss").status_code == 404
    assert "Nothing to decide" in other.get("/me/conflicts").content.decode()
    response = browser.post(f"/me/conflicts/{learning.pk}/accept")
    assert response.status_code == 302
    learning.refresh_from_db()
    assert learning.conflict == Learning.Conflict.ACCEPTED
    assert "Nothing to decide" in browser.get("/me/conflicts").content.decode()


def test_owners_decide_the_conflicts_of_directory_people_who_cannot_sign_in(org, owner, member, agent, post_events):
    from accounts.people import person_upsert
    from memories.tests.remembered import remembered

    person, _ = person_upsert(organisation=org, handle="U123", display_name="Mona Lisa")
    remembered(
        organisation=org,
        bucket=Bucket.USER,
        author="person",
        body="My timezone is CET",
        source_kind="person",
        owner=person.user,
        subject_type="user",
        subject_id=str(person.user_id),
        scope="person",
        scope_ref=str(person.user_id),
    )
    thread = post_events(
        "T-dir", [("U123", "My timezone is PST")], place={"channel": "D-u123", "kind": "dm", "people": ["U123"]}
    )
    assert len(thread_consolidate(thread_id=thread.pk).conflicts) == 1
    as_owner = Client()
    as_owner.force_login(owner)
    page = as_owner.get("/me/conflicts").content.decode()
    assert "Mona Lisa (who cannot sign in) said" in page and "mona&#x27;s" not in page
    as_member = Client()  # control: a member does not see someone else's conflicts
    as_member.force_login(member)
    assert "Nothing to decide" in as_member.get("/me/conflicts").content.decode()
