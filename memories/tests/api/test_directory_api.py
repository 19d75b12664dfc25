"""PUT/GET /api/v1/people and /api/v1/places: records written only by owners and agents with the directory right."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from accounts.access import person_invite
from accounts.models import AgentToken, Membership
from memories.models import Channel, ChannelMember, Memory, PlaceAudit
from memories.tests.api.helpers import recall, remember


def put_person(client, handle, display_name="Newcomer"):
    return client.put(f"/api/v1/people/{handle}", {"display_name": display_name}, format="json")


def put_place(client, channel, kind, people):
    return client.put(f"/api/v1/places/{channel}", {"kind": kind, "people": people}, format="json")


def test_an_agent_creates_then_updates_a_directory_person(agent_api, org):
    created = put_person(agent_api, "U024BE7LH", "Mona Lisa")
    assert created.status_code == 201, created.content
    data = created.json()
    assert (data["handle"], data["display_name"], data["username"], data["can_sign_in"]) == (
        "U024BE7LH",
        "Mona Lisa",
        None,
        False,
    )
    updated = put_person(agent_api, "U024BE7LH", "Mona L.")
    assert updated.status_code == 200
    assert updated.json()["id"] == data["id"]
    assert Membership.objects.get(organisation=org, handle="U024BE7LH").display_name == "Mona L."
    listed = agent_api.get("/api/v1/people").json()["results"]
    assert "U024BE7LH" in {row["handle"] for row in listed}


def test_handles_are_per_organisation(agent_api, outsider_agent_api):
    assert put_person(agent_api, "U1").status_code == 201
    assert put_person(outsider_agent_api, "U1").status_code == 201  # another organisation's U1 is another person
    ids = {row["id"] for row in outsider_agent_api.get("/api/v1/people").json()["results"] if row["handle"] == "U1"}
    assert len(ids) == 1
    ours = {row["id"] for row in agent_api.get("/api/v1/people").json()["results"] if row["handle"] == "U1"}
    assert ids.isdisjoint(ours)


def test_a_handle_may_not_be_another_persons_username(agent_api, member):
    refused = put_person(agent_api, member.username)
    assert refused.status_code == 400
    assert "handle" in refused.json()["fields"]


@pytest.mark.parametrize("handle", ["has space", "x" * 151, "semi;colon", "ünïcode"])
def test_a_malformed_handle_is_refused_by_name(agent_api, handle):
    response = put_person(agent_api, handle)
    assert response.status_code == 400
    assert "handle" in response.json()["fields"]


def test_the_database_refuses_a_duplicate_or_malformed_handle(org, member, second_member):
    Membership.objects.filter(user=member).update(handle="U9")
    with (
        pytest.raises(IntegrityError, match="accounts_membership_handle_per_org"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE accounts_membership SET handle = 'U9' WHERE user_id = %s", [second_member.pk])
    with (
        pytest.raises(IntegrityError, match="accounts_membership_handle_shape"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE accounts_membership SET handle = 'a b' WHERE user_id = %s", [second_member.pk])


def test_members_and_agents_without_the_right_cannot_write_records(member_api, agent_api, agent_with_token, owner_api):
    assert put_person(member_api, "U5").status_code == 403
    assert put_place(member_api, "G-x", "private", ["mona"]).status_code == 403
    AgentToken.objects.filter(agent=agent_with_token[0]).update(directory=False)
    assert put_person(agent_api, "U5").status_code == 403
    assert put_place(agent_api, "G-x", "private", ["mona"]).status_code == 403
    # Positive control: an owner may.
    assert put_person(owner_api, "U5").status_code == 201
    assert put_place(owner_api, "G-x", "private", ["mona"]).status_code == 201


def test_a_directory_person_can_be_named_in_places_and_subjects_and_erased(org, agent_api, owner_api):
    person = put_person(agent_api, "U777", "Newcomer").json()
    assert put_place(agent_api, "D-777", "dm", ["U777"]).status_code == 201
    dm = {"channel": "D-777", "kind": "dm", "people": ["U777"]}
    fact = remember(agent_api, dm, "Prefers mornings").json()
    assert (fact["scope_ref"], fact["subject_id"]) == (person["id"], person["id"])
    about = remember(
        agent_api,
        {"channel": "C-general", "kind": "public", "people": []},
        "Newcomer joined in November",
        subject_type="user",
        subject_id="U777",
    ).json()
    assert about["subject_id"] == person["id"]
    assert [row["body"] for row in recall(agent_api, dm, "mornings").json()["results"]] == ["Prefers mornings"]
    erased = owner_api.post(f"/api/v1/subjects/user/{person['id']}/erase", {"reason": "asked"}, format="json")
    assert erased.status_code == 200, erased.content
    assert not Memory.objects.filter(subject_id=person["id"], redacted_at__isnull=True).exists()


def test_an_invited_directory_person_keeps_everything_said_about_them(org, owner, agent_api):
    person = put_person(agent_api, "U888", "Later").json()
    put_place(agent_api, "D-888", "dm", ["U888"])
    remember(agent_api, {"channel": "D-888", "kind": "dm", "people": ["U888"]}, "Likes green tea")
    membership = Membership.objects.select_related("user").get(organisation=org, handle="U888")
    person_invite(membership=membership, username="later", actor=owner)
    membership.refresh_from_db()
    assert str(membership.user_id) == person["id"]
    assert not membership.directory
    # Named by the new username or the handle, it is the same person.
    by_username = remember(agent_api, {"channel": "D-888", "kind": "dm", "people": ["later"]}, "Works late")
    assert by_username.status_code == 201, by_username.content
    assert by_username.json()["scope_ref"] == person["id"]


def test_a_place_write_records_membership_with_an_audit_row(org, agent_api, owner_api, owner, member, second_member):
    created = put_place(agent_api, "G-ops", "private", ["mona"])
    assert created.status_code == 201
    assert created.json()["people"] == ["mona"]
    changed = put_place(owner_api, "G-ops", "private", ["max"])
    assert changed.status_code == 200
    assert set(ChannelMember.objects.filter(channel__external_id="G-ops").values_list("user_id", flat=True)) == {
        second_member.pk
    }
    audits = list(PlaceAudit.objects.filter(channel__external_id="G-ops").order_by("id"))
    assert [(a.added, a.removed) for a in audits] == [
        ([str(member.pk)], []),
        ([str(second_member.pk)], [str(member.pk)]),
    ]
    assert audits[1].actor_id == owner.pk and audits[0].agent_id is not None
    unchanged = put_place(owner_api, "G-ops", "private", ["max"])
    assert unchanged.status_code == 200
    assert PlaceAudit.objects.filter(channel__external_id="G-ops").count() == 2  # nothing changed, nothing audited


def test_a_dm_stays_with_its_person(agent_api, member, second_member):
    assert put_place(agent_api, "D-1", "dm", ["mona"]).status_code == 201
    assert put_place(agent_api, "D-1", "dm", ["max"]).status_code == 409
    assert put_place(agent_api, "D-2", "dm", ["mona", "max"]).status_code == 400


@pytest.mark.parametrize("channel", ["%20lead", "trail%20", "x" * 201, "tab%09in"])
def test_a_malformed_channel_in_the_path_is_refused_by_name(agent_api, channel):
    response = agent_api.put(f"/api/v1/places/{channel}", {"kind": "public", "people": []}, format="json")
    assert response.status_code == 400, response.content
    assert "channel" in response.json()["fields"]


def test_a_malformed_channel_in_a_body_is_refused_by_name(agent_api):
    response = recall(agent_api, {"channel": " padded", "kind": "public", "people": []}, "x")
    assert response.status_code == 400
    assert "place.channel" in response.json()["fields"]


def test_places_lists_what_the_caller_may_use(org, member_api, agent_api, owner_api, second_member):
    put_place(owner_api, "G-max", "private", ["max"])
    put_place(owner_api, "C-all", "public", [])
    put_place(owner_api, "D-mona", "dm", ["mona"])
    assert {row["channel"] for row in member_api.get("/api/v1/places").json()} == {"C-all", "D-mona"}
    assert {row["channel"] for row in agent_api.get("/api/v1/places").json()} == {"G-max", "C-all", "D-mona"}
    assert Channel.objects.filter(organisation=org).count() == 3
