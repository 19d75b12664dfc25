"""Only stewards see the stewards' admin; owners, members and administrators without the role see none of it."""

from __future__ import annotations

import pytest

from accounts.models import Membership

SCREENS = [
    "/admin/admissions/systemclaim/",
    "/admin/admissions/admissionrecord/",
    "/admin/admissions/stance/",
]


@pytest.mark.parametrize("url", SCREENS)
def test_a_steward_sees_the_queue_the_audit_and_the_stances(steward_client, url):
    assert steward_client.get(url).status_code == 200


def test_a_stewards_admin_index_shows_admissions_and_nothing_else(steward_client):
    page = steward_client.get("/admin/").content.decode()
    assert "/admin/admissions/systemclaim/" in page
    assert "/admin/memories/" not in page and "/admin/accounts/" not in page and "/admin/auth/" not in page


@pytest.mark.parametrize("persona", ["owner", "member"])
@pytest.mark.parametrize("url", [*SCREENS, "/admin/"])
def test_owners_and_members_are_sent_to_the_login(db, client, request, persona, url):
    client.force_login(request.getfixturevalue(persona))
    response = client.get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.parametrize("url", SCREENS)
def test_an_administrator_without_the_steward_role_is_refused(client, superuser, url):
    client.force_login(superuser)
    assert client.get(url).status_code == 403
    assert "/admin/admissions/" not in client.get("/admin/").content.decode()


def test_a_demoted_steward_loses_the_screens_at_once(steward_client, steward):
    membership = Membership.objects.get(user=steward)
    membership.role = Membership.Role.MEMBER
    membership.save()
    response = steward_client.get(SCREENS[0])
    assert response.status_code == 302


def test_staff_with_the_stewards_permissions_but_not_the_role_is_still_refused(client, member):
    from django.contrib.auth.models import Group

    member.is_staff = True
    member.save()
    member.groups.add(Group.objects.get(name="Stewards"))
    client.force_login(member)
    assert client.get(SCREENS[0]).status_code == 403
