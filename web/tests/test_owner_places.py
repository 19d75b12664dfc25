"""Owners record places and change their members; every change is audited and shown to the place's members."""

from __future__ import annotations

from django.urls import reverse

from accounts.people import person_upsert
from memories.models import Channel, ChannelMember, PlaceAudit
from memories.places import place_put


def members_of(channel: Channel) -> set[str]:
    return {member.user.username for member in ChannelMember.objects.filter(channel=channel).select_related("user")}


def test_an_owner_records_a_place_and_changes_its_members_each_audited(client, org, owner, member, second_member):
    client.force_login(owner)
    response = client.post(reverse("web:places"), {"channel": "C-design", "kind": "private", "people": "mona"})
    channel = Channel.objects.get(organisation=org, external_id="C-design")
    assert response["Location"] == reverse("web:place-detail", args=[channel.pk])
    assert members_of(channel) == {"mona"}

    client.post(reverse("web:place-detail", args=[channel.pk]), {"kind": "private", "people": "max, mona"})
    client.post(reverse("web:place-detail", args=[channel.pk]), {"kind": "private", "people": "max"})
    assert members_of(channel) == {"max"}
    audit = list(PlaceAudit.objects.filter(channel=channel).order_by("at", "id"))
    assert [(row.added, row.removed) for row in audit] == [
        ([str(member.pk)], []),
        ([str(second_member.pk)], []),
        ([], [str(member.pk)]),
    ]
    assert all(row.actor_id == owner.pk for row in audit)

    page = client.get(reverse("web:place-detail", args=[channel.pk])).content.decode()
    assert "Removed: mona" in page and "Added: max" in page and "olive (owner)" in page


def test_saving_the_same_record_leaves_no_audit_row(client, org, owner, member):
    client.force_login(owner)
    record, _ = place_put(organisation=org, channel="C1", kind="private", people=["mona"], actor=owner)
    client.post(reverse("web:place-detail", args=[record.channel.pk]), {"kind": "private", "people": "mona"})
    assert PlaceAudit.objects.filter(channel=record.channel).count() == 1


def test_the_audit_names_people_as_they_are_called_now(client, org, owner):
    # No display name: pages name them by their handle, so a new handle shows.
    person, _ = person_upsert(organisation=org, handle="U42", display_name="")
    record, _ = place_put(organisation=org, channel="C1", kind="private", people=["U42"], actor=owner)
    person.handle = "ula-renamed"
    person.save(update_fields=["handle"])
    client.force_login(owner)
    page = client.get(reverse("web:place-detail", args=[record.channel.pk])).content.decode()
    assert "Added: ula-renamed" in page and "U42" not in page


def test_bad_places_are_refused_by_field_and_change_nothing(client, org, owner, member, second_member):
    client.force_login(owner)
    cases = [
        ({"channel": "a/b", "kind": "private", "people": "mona"}, "no slash"),
        ({"channel": "C1", "kind": "group", "people": "mona"}, "Select a valid choice"),
        ({"channel": "C1", "kind": "private", "people": "mona nobody"}, "Not a person of your organisation: nobody"),
        ({"channel": "C1", "kind": "dm", "people": "mona max"}, "exactly one person"),
    ]
    for data, problem in cases:
        response = client.post(reverse("web:places"), data)
        assert response.status_code == 400 and problem in response.content.decode(), data
    assert not Channel.objects.exists() and not PlaceAudit.objects.exists()

    record, _ = place_put(organisation=org, channel="D1", kind="dm", people=["mona"], actor=owner)
    response = client.post(reverse("web:place-detail", args=[record.channel.pk]), {"kind": "dm", "people": "max"})
    assert response.status_code == 409 and "A DM stays with the person" in response.content.decode()
    assert members_of(record.channel) == {"mona"}
    response = client.post(reverse("web:places"), {"channel": "D1", "kind": "private", "people": "max"})
    assert response.status_code == 400 and "is recorded" in response.content.decode()


def test_a_member_sees_an_owners_change_to_their_private_place(client, org, owner, member, second_member):
    record, _ = place_put(organisation=org, channel="C-finance", kind="private", people=["max"], actor=owner)
    client.force_login(owner)
    client.post(reverse("web:place-detail", args=[record.channel.pk]), {"kind": "private", "people": "max mona"})

    client.force_login(second_member)
    page = client.get(reverse("web:my-places")).content.decode()
    assert "C-finance" in page and "Recent changes by owners" in page and "Added: mona" in page

    client.force_login(member)
    page = client.get(reverse("web:my-places")).content.decode()
    assert "C-finance" in page and "olive (owner)" in page


def test_someone_outside_a_private_place_sees_neither_it_nor_its_audit(client, org, owner, member, second_member):
    place_put(organisation=org, channel="C-finance", kind="private", people=["max"], actor=owner)
    place_put(organisation=org, channel="C-open", kind="public", people=[], actor=owner)
    client.force_login(member)
    page = client.get(reverse("web:my-places")).content.decode()
    assert "C-finance" not in page and "max" not in page
    assert "C-open" in page  # positive control: a public channel is everyone's


def test_someone_taken_out_of_a_place_is_told_but_not_who_is_left(client, org, owner, member, second_member):
    record, _ = place_put(organisation=org, channel="C-finance", kind="private", people=["max", "mona"], actor=owner)
    client.force_login(owner)
    client.post(reverse("web:place-detail", args=[record.channel.pk]), {"kind": "private", "people": "max"})
    client.force_login(member)
    page = client.get(reverse("web:my-places")).content.decode()
    assert "Places you were taken out of" in page and "C-finance" in page and "removed by olive (owner)" in page
    assert "max" not in page


def test_more_people_than_a_place_holds_are_refused_by_field_and_limit(client, owner):
    client.force_login(owner)
    people = " ".join(f"p{index}" for index in range(501))
    response = client.post(reverse("web:places"), {"channel": "C1", "kind": "public", "people": people})
    assert response.status_code == 400 and "A place names at most 500 people." in response.content.decode()
    assert not Channel.objects.exists()


def test_the_place_page_keeps_a_dm_a_dm_and_moves_a_channel_between_private_and_public(client, org, owner, member):
    dm, _ = place_put(organisation=org, channel="D-v", kind="dm", people=["mona"], actor=owner)
    client.force_login(owner)
    for kind in ("private", "public"):
        response = client.post(reverse("web:place-detail", args=[dm.channel.pk]), {"kind": kind, "people": "mona"})
        assert response.status_code == 409 and "a DM stays a DM" in response.content.decode()
    assert Channel.objects.get(pk=dm.channel.pk).kind == "dm"

    channel, _ = place_put(organisation=org, channel="C-1", kind="private", people=["mona"], actor=owner)
    response = client.post(reverse("web:place-detail", args=[channel.channel.pk]), {"kind": "dm", "people": "mona"})
    assert response.status_code == 409
    response = client.post(reverse("web:place-detail", args=[channel.channel.pk]), {"kind": "public", "people": ""})
    assert response.status_code == 302  # positive control
    assert [row.kind_to for row in PlaceAudit.objects.filter(channel=channel.channel).order_by("id")] == [
        "private",
        "public",
    ]
