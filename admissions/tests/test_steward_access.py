"""The steward role brings admin access with the Stewards group's few permissions, and takes them away again."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.core.management import call_command

from accounts.models import Membership
from admissions.roles import STEWARD_PERMISSIONS, STEWARDS_GROUP


def _codenames(group):
    return {(p.content_type.app_label, p.codename) for p in group.permissions.select_related("content_type")}


def test_the_stewards_group_holds_exactly_the_stewards_permissions(db):
    group = Group.objects.get(name=STEWARDS_GROUP)
    assert _codenames(group) == set(STEWARD_PERMISSIONS)
    # Least privilege: nothing a steward could use to edit or delete a row.
    assert not any(codename.startswith(("change_", "delete_")) for _, codename in _codenames(group))


def test_a_new_steward_gets_staff_access_and_the_group(steward):
    steward.refresh_from_db()
    assert steward.is_staff and not steward.is_superuser
    assert steward.groups.filter(name=STEWARDS_GROUP).exists()
    assert steward.has_perm("admissions.decide_claim")
    assert not steward.has_perm("memories.view_memory")
    assert not steward.has_perm("accounts.view_user")


def test_owners_and_members_get_no_staff_access(owner, member):
    for user in (owner, member):
        user.refresh_from_db()
        assert not user.is_staff
        assert not user.has_perm("admissions.view_systemclaim")


def test_a_steward_demoted_to_member_loses_the_admin(steward):
    membership = Membership.objects.get(user=steward)
    membership.role = Membership.Role.MEMBER
    membership.save()
    steward.refresh_from_db()
    assert not steward.is_staff
    assert not steward.groups.filter(name=STEWARDS_GROUP).exists()


def test_a_member_promoted_to_steward_gains_it(member):
    membership = Membership.objects.get(user=member)
    membership.role = Membership.Role.STEWARD
    membership.save()
    member.refresh_from_db()
    assert member.is_staff and member.groups.filter(name=STEWARDS_GROUP).exists()


def test_the_group_is_rebuilt_with_its_permissions_after_a_flush_empties_it(db):
    Group.objects.filter(name=STEWARDS_GROUP).delete()
    call_command("migrate", "admissions", verbosity=0)  # emits post_migrate, as a flush does
    assert _codenames(Group.objects.get(name=STEWARDS_GROUP)) == set(STEWARD_PERMISSIONS)
