"""The operators' admin changes places, roles, who signs in and an organisation's switches only through the
audited services: a form save cannot change them, the actions write an audit row and report counts."""

from __future__ import annotations

import pytest

from accounts.models import AccountAudit, Membership, Organisation, User
from memories.models import Channel, ChannelMember, PlaceAudit
from memories.places import place_put

pytestmark = pytest.mark.django_db


def act(client, model: str, action: str, *pks):
    return client.post(
        f"/admin/accounts/{model}/", {"action": action, "_selected_action": [str(pk) for pk in pks]}, follow=True
    )


def test_a_channels_kind_and_members_cannot_be_changed_in_the_admin(admin_client, org, owner, member, second_member):
    record, _ = place_put(organisation=org, channel="D-v", kind="dm", people=["mona"], actor=owner)
    channel = record.channel
    page = admin_client.get(f"/admin/memories/channel/{channel.pk}/change/")
    assert page.status_code == 200 and "D-v" in page.content.decode()  # positive control: shown
    assert 'name="kind"' not in page.content.decode()
    response = admin_client.post(
        f"/admin/memories/channel/{channel.pk}/change/",
        {
            "organisation": org.pk,
            "external_id": "D-v",
            "kind": "private",
            "channelmember_set-TOTAL_FORMS": "1",
            "channelmember_set-INITIAL_FORMS": "0",
            "channelmember_set-0-organisation": org.pk,
            "channelmember_set-0-user": second_member.pk,
        },
    )
    assert response.status_code == 403
    assert Channel.objects.get(pk=channel.pk).kind == "dm"
    assert list(ChannelMember.objects.filter(channel=channel).values_list("user_id", flat=True)) == [member.pk]
    assert PlaceAudit.objects.filter(channel=channel).count() == 1
    assert admin_client.get("/admin/memories/channel/add/").status_code == 403


def test_a_role_changes_only_by_the_audited_action(admin_client, admin_user, org, owner, member):
    membership = Membership.objects.get(user=member)
    response = admin_client.post(
        f"/admin/accounts/membership/{membership.pk}/change/",
        {"organisation": org.pk, "user": member.pk, "role": "steward"},
    )
    assert response.status_code == 403 and Membership.objects.get(pk=membership.pk).role == "member"
    assert not AccountAudit.objects.exists()

    page = act(admin_client, "membership", "make_steward", membership.pk).content.decode()
    assert "1 people made steward" in page
    member.refresh_from_db()
    assert Membership.objects.get(pk=membership.pk).role == "steward" and member.is_staff
    row = AccountAudit.objects.get()
    assert (row.action, row.actor_id, row.person_id, row.detail) == (
        "role",
        admin_user.pk,
        member.pk,
        {"role_from": "member", "role_to": "steward"},
    )
    owner_membership = Membership.objects.get(user=owner)
    page = act(admin_client, "membership", "make_member", owner_membership.pk).content.decode()
    assert "at least one owner" in page and "0 people made member" in page


def test_an_organisations_switches_change_only_by_the_audited_actions(admin_client, admin_user, org):
    response = admin_client.post(
        f"/admin/accounts/organisation/{org.pk}/change/",
        {"slug": org.slug, "name": "Acme", "system_recall_opt_in": "on", "thread_episodes": ""},
    )
    assert response.status_code == 302  # the name may change; the switches are shown, not edited
    org.refresh_from_db()
    assert org.system_recall_opt_in is False and org.thread_episodes is True
    assert not AccountAudit.objects.exists()

    assert "1 organisations opted in" in act(admin_client, "organisation", "opt_in", org.pk).content.decode()
    act(admin_client, "organisation", "episodes_off", org.pk)
    org.refresh_from_db()
    assert org.system_recall_opt_in is True and org.thread_episodes is False
    assert [row.detail for row in AccountAudit.objects.order_by("id")] == [
        {"switch": "system_recall_opt_in", "on": True},
        {"switch": "thread_episodes", "on": False},
    ]
    assert set(AccountAudit.objects.values_list("actor_id", flat=True)) == {admin_user.pk}


def test_sign_in_is_removed_and_restored_by_the_audited_actions_only(admin_client, admin_user, org, member):
    page = admin_client.get(f"/admin/accounts/user/{member.pk}/change/").content.decode()
    assert "mona" in page and 'name="is_active"' not in page
    act(admin_client, "user", "remove", member.pk)
    member.refresh_from_db()
    assert not member.is_active and member.check_password("pw-mona-123")
    act(admin_client, "user", "restore", member.pk)
    assert User.objects.get(pk=member.pk).is_active
    assert [(row.action, row.actor_id, row.person_id) for row in AccountAudit.objects.order_by("id")] == [
        ("remove", admin_user.pk, member.pk),
        ("restore", admin_user.pk, member.pk),
    ]
    assert Organisation.objects.get(pk=org.pk)  # the organisation is untouched


def test_the_operators_screens_still_open(admin_client, org, owner, member):
    place_put(organisation=org, channel="C-1", kind="private", people=["mona"], actor=owner)
    membership = Membership.objects.get(user=member)
    for url in (
        "/admin/accounts/user/add/",
        f"/admin/accounts/user/{member.pk}/change/",
        "/admin/accounts/membership/",
        f"/admin/accounts/membership/{membership.pk}/change/",
        "/admin/accounts/organisation/",
        "/admin/accounts/accountaudit/",
        "/admin/memories/channel/",
    ):
        assert admin_client.get(url).status_code == 200, url
