"""What "My memories", a memory's page and correct/pin/forget allow follows the place records, as recall does:
a person's own person facts, facts of channels whose record lists them and of public channels, workspace facts."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.access import person_invite
from accounts.people import person_upsert
from memories.models import Author, Bucket, Channel, Memory, SourceKind
from memories.places import place_put
from web.tests.factories import person_fact, shared_fact

CHANGES = ("web:memory-correct", "web:memory-pin", "web:memory-forget")


@pytest.fixture
def places(org, owner, member, second_member, agent):
    """A private channel with max only, a public channel with nobody listed, and a fact in each."""
    private, _ = place_put(organisation=org, channel="C-finance", kind="private", people=["max"], actor=owner)
    public, _ = place_put(organisation=org, channel="C-general", kind="public", people=[], actor=owner)
    return {
        "private": private.channel,
        "private_fact": shared_fact(
            organisation=org, agent=agent, channel=private.channel, body="Invoices are approved by the CFO"
        ),
        "public_fact": shared_fact(organisation=org, agent=agent, channel=public.channel, body="Lunch is at noon"),
    }


def listed(client) -> str:
    response = client.get(reverse("web:memory-list"))
    assert response.status_code == 200
    return response.content.decode()


def assert_reachable(client, memory: Memory, reachable: bool) -> None:
    assert (memory.body in listed(client)) is reachable
    status = client.get(reverse("web:memory-detail", args=[memory.pk])).status_code
    assert status == (200 if reachable else 404)


def test_a_person_not_in_a_private_channel_neither_sees_nor_changes_its_facts(client, member, places):
    client.force_login(member)
    fact = places["private_fact"]
    assert_reachable(client, fact, False)
    for name in CHANGES:
        assert client.post(reverse(name, args=[fact.pk]), {"body": "x", "reason": "x"}).status_code == 404
    fact.refresh_from_db()
    assert fact.superseded_by_id is None and fact.redacted_at is None and not fact.pinned


def test_a_member_of_the_private_channel_sees_and_pins_its_facts(client, second_member, places):
    client.force_login(second_member)
    fact = places["private_fact"]
    assert_reachable(client, fact, True)
    assert client.post(reverse("web:memory-pin", args=[fact.pk])).status_code == 302
    fact.refresh_from_db()
    assert fact.pinned


def test_a_public_channels_facts_are_everyones_though_its_record_lists_nobody(client, member, places):
    client.force_login(member)
    assert_reachable(client, places["public_fact"], True)


def test_being_added_to_or_taken_out_of_a_place_changes_what_the_pages_show(client, org, owner, member, places):
    client.force_login(member)
    fact = places["private_fact"]
    place_put(organisation=org, channel="C-finance", kind="private", people=["max", "mona"], actor=owner)
    assert_reachable(client, fact, True)
    place_put(organisation=org, channel="C-finance", kind="private", people=["max"], actor=owner)
    assert_reachable(client, fact, False)
    assert client.post(reverse("web:memory-forget", args=[fact.pk]), {"reason": "x"}).status_code == 404


def test_a_directory_person_invited_later_sees_what_was_said_about_them(client, org, owner, member, agent):
    person, _ = person_upsert(organisation=org, handle="U42", display_name="Ula")
    fact = person_fact(organisation=org, person=person.user, agent=agent, body="Ula prefers written updates")
    client.force_login(member)
    assert_reachable(client, fact, False)  # another person's person fact

    person_invite(membership=person, username="ula", actor=owner)
    person.user.set_password("ula-long-passphrase")
    person.user.save()
    client.force_login(person.user)
    assert_reachable(client, fact, True)


def test_a_fact_someone_saved_in_a_channel_leaves_with_them_when_they_are_taken_out(client, org, owner, member):
    place_put(organisation=org, channel="C-x", kind="private", people=["mona"], actor=owner)
    fact = shared_fact(
        organisation=org,
        channel=Channel.objects.get(organisation=org, external_id="C-x"),
        body="Saved in C-x by mona",
        bucket=Bucket.USER,
        author=Author.PERSON,
        source_kind=SourceKind.PERSON,
        owner=member,
        written_by=member,
    )
    client.force_login(member)
    assert_reachable(client, fact, True)
    place_put(organisation=org, channel="C-x", kind="private", people=["olive"], actor=owner)
    assert_reachable(client, fact, False)
