"""An account is its holder's: an owner removes and restores people, invites only directory people who never
had an account, and changes roles among owner and member; each change is an audit row of ids."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import AccountAudit, Membership, User
from accounts.people import person_upsert


def signs_in(username: str, password: str) -> bool:
    return Client().login(username=username, password=password)


def audit(org) -> list[tuple]:
    rows = AccountAudit.objects.filter(organisation=org).order_by("id")
    return [(row.action, row.actor_id, row.person_id, row.detail) for row in rows]


@pytest.mark.parametrize("persona", ["member", "steward"])
def test_remove_then_invite_gives_the_owner_no_way_into_a_members_account(client, request, persona, owner, org):
    """The attack: remove a member (or a steward), invite them under their own username, set a password."""
    member = request.getfixturevalue(persona)
    password = {"member": "pw-mona-123", "steward": "pw-stella-123"}[persona]
    client.force_login(owner)
    client.post(reverse("web:person-remove", args=[member.pk]), {"confirm": "on"})
    response = client.post(reverse("web:person-invite", args=[member.pk]), {"username": member.username})
    assert response.status_code == 302 and response["Location"] == reverse("web:people")
    assert "invite-link" not in response.content.decode()
    page = client.get(reverse("web:people")).content.decode()
    assert f"{member.username} already has an account and signs in themself" in page
    assert "manage.py changepassword" in page
    assert reverse("web:person-invite", args=[member.pk]) not in page  # no invite link is offered either
    username = member.username
    member.refresh_from_db()
    assert member.username == username and member.check_password(password) and not member.is_active
    assert [row[0] for row in audit(org)] == ["remove"]  # the refused invitation wrote nothing


def test_a_removed_person_is_restored_with_their_own_password_each_step_audited(client, owner, member, org):
    client.force_login(owner)
    client.post(reverse("web:person-remove", args=[member.pk]), {"confirm": "on"})
    assert not signs_in(member.username, "pw-mona-123")
    page = client.get(reverse("web:people")).content.decode()
    assert reverse("web:person-restore", args=[member.pk]) in page
    response = client.post(reverse("web:person-restore", args=[member.pk]))
    assert response["Location"] == reverse("web:people")
    assert signs_in(member.username, "pw-mona-123")
    assert audit(org) == [("remove", owner.pk, member.pk, {}), ("restore", owner.pk, member.pk, {})]
    changes = client.get(reverse("web:people")).content.decode().split('id="account-audit"')[1]
    assert "Restored: signs in again: <strong>mona</strong> by <strong>olive</strong>" in changes
    assert "Removed: cannot sign in: <strong>mona</strong>" in changes
    assert client.post(reverse("web:person-restore", args=[member.pk])).status_code == 302
    assert len(audit(org)) == 2  # restoring an active person changes nothing and writes nothing


def test_a_directory_person_is_invited_once_audited_and_a_removed_persons_link_stops_working(client, owner, org):
    person, _ = person_upsert(organisation=org, handle="U42", display_name="Ula", actor=owner)
    client.force_login(owner)
    response = client.post(reverse("web:person-invite", args=[person.user_id]), {"username": "ula"})
    assert response.status_code == 200
    link = re.search(r'<code id="invite-link">([^<]+)</code>', response.content.decode()).group(1)
    assert audit(org) == [("create", owner.pk, person.user_id, {}), ("invite", owner.pk, person.user_id, {})]

    client.post(reverse("web:person-remove", args=[person.user_id]), {"confirm": "on"})
    client.logout()
    assert (
        "This link no longer works" in client.get(link.removeprefix("http://testserver"), follow=True).content.decode()
    )


def test_an_owner_makes_a_member_an_owner_and_back_audited(client, owner, member, org):
    client.force_login(owner)
    response = client.post(reverse("web:person-role", args=[member.pk]), {"role": "owner"})
    assert response["Location"] == reverse("web:people")
    assert Membership.objects.get(user=member).role == "owner"
    client.post(reverse("web:person-role", args=[member.pk]), {"role": "member"})
    assert Membership.objects.get(user=member).role == "member"
    assert audit(org) == [
        ("role", owner.pk, member.pk, {"role_from": "member", "role_to": "owner"}),
        ("role", owner.pk, member.pk, {"role_from": "owner", "role_to": "member"}),
    ]


def test_an_owner_cannot_grant_steward_nor_change_a_stewards_role(client, owner, member, steward, org):
    client.force_login(owner)
    response = client.post(reverse("web:person-role", args=[member.pk]), {"role": "steward"})
    assert response.status_code == 400
    response = client.post(reverse("web:person-role", args=[steward.pk]), {"role": "member"})
    assert response.status_code == 400 and "Only an operator" in response.content.decode()
    assert Membership.objects.get(user=member).role == "member"
    assert Membership.objects.get(user=steward).role == "steward"
    assert not User.objects.get(pk=member.pk).is_staff
    assert audit(org) == []


def test_a_member_cannot_reach_the_people_pages_writes(client, owner, member, second_member, org):
    client.force_login(member)
    for name, data in (("web:person-role", {"role": "owner"}), ("web:person-restore", {})):
        assert client.post(reverse(name, args=[second_member.pk]), data).status_code == 403
    assert Membership.objects.get(user=second_member).role == "member" and audit(org) == []
