"""A person is named one way wherever they are named: by their handle, else their username, in answers and
forms; by their display name, else that, on pages; and an actor on a receipt as "agent:", "user:" or "system"."""

from __future__ import annotations

import uuid

from accounts.auth import Principal
from accounts.labels import receipt_actor_label
from accounts.models import Membership, handle_or_username
from accounts.people import people_display_names, people_labels, person_upsert
from memories.places import Member


def test_the_handle_names_a_person_before_their_username():
    assert handle_or_username("U042", "mona") == "U042"
    assert handle_or_username(None, "mona") == "mona"  # control: without a handle, the username
    assert handle_or_username("", "mona") == "mona"


def test_a_membership_and_a_place_member_say_the_same_name(org, member):
    directory, _ = person_upsert(organisation=org, handle="U042", display_name="Dana Doe")
    for membership in (directory, Membership.objects.select_related("user").get(user=member)):
        place_member = Member(
            id=str(membership.user_id), handle=membership.handle or "", username=membership.user.username
        )
        assert place_member.label == membership.label
    assert directory.label == "U042" and Membership.objects.get(user=member).label == "mona"


def test_people_labels_answer_by_id_and_leave_a_stranger_as_given(org, other_org, member):
    dana, _ = person_upsert(organisation=org, handle="U042", display_name="Dana Doe")
    theirs, _ = person_upsert(organisation=other_org, handle="U777", display_name="")
    stranger = str(uuid.uuid4())
    ids = [str(member.pk), str(dana.user_id), stranger, str(theirs.user_id)]
    assert people_labels(organisation=org, ids=ids) == {
        str(member.pk): "mona",
        str(dana.user_id): "U042",
        stranger: stranger,
        str(theirs.user_id): str(theirs.user_id),  # another organisation's person is nobody here
    }
    assert people_labels(organisation=org, ids=[]) == {}


def test_pages_name_a_person_by_display_name_else_their_label(org, member):
    dana, _ = person_upsert(organisation=org, handle="U042", display_name="Dana Doe")
    nameless, _ = person_upsert(organisation=org, handle="U043", display_name="")
    names = people_display_names(organisation=org, ids=[member.pk, dana.user_id, nameless.user_id])
    assert names == {str(member.pk): "mona", str(dana.user_id): "Dana Doe", str(nameless.user_id): "U043"}
    assert set(people_display_names(organisation=org)) == set(names)  # no ids: everyone


def test_a_receipt_names_the_agent_else_the_person_else_the_system(org, agent, member):
    assert receipt_actor_label(agent=agent, user=member) == f"agent:{agent.name}"
    assert receipt_actor_label(agent=None, user=member) == "user:mona"
    assert receipt_actor_label(agent=None, user=None) == "system"
    # The caller of a request is named the same way.
    assert Principal(organisation=org, agent=agent).label == f"agent:{agent.name}"
    assert Principal(organisation=org, user=member).label == "user:mona"
