"""One audited service changes roles: owners give owner or member, operators any role, and an organisation
keeps an owner; the stewards' admin access follows the role it writes."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from accounts.models import AccountAudit, Membership
from accounts.roles import membership_set_role


def role_of(user) -> str:
    return Membership.objects.get(user=user).role


def test_an_owner_cannot_grant_steward_an_operator_can_and_access_follows(org, owner, member, admin_user):
    membership = Membership.objects.get(user=member)
    with pytest.raises(ValidationError, match="Only an operator"):
        membership_set_role(membership=membership, role="steward", actor=owner)
    assert role_of(member) == "member" and not AccountAudit.objects.exists()

    membership_set_role(membership=membership, role="steward", actor=admin_user)
    member.refresh_from_db()
    assert role_of(member) == "steward" and member.is_staff
    row = AccountAudit.objects.get()
    assert (row.action, row.actor_id, row.person_id) == ("role", admin_user.pk, member.pk)
    assert row.detail == {"role_from": "member", "role_to": "steward"}


def test_a_member_or_an_outsider_cannot_change_roles(org, member, second_member, outsider):
    for actor in (member, outsider):
        with pytest.raises(PermissionDenied):
            membership_set_role(membership=Membership.objects.get(user=second_member), role="owner", actor=actor)
    assert role_of(second_member) == "member"


def test_the_last_owner_stays_an_owner(org, owner, member):
    with pytest.raises(ValidationError, match="at least one owner"):
        membership_set_role(membership=Membership.objects.get(user=owner), role="member", actor=owner)
    membership_set_role(membership=Membership.objects.get(user=member), role="owner", actor=owner)
    membership_set_role(membership=Membership.objects.get(user=owner), role="member", actor=owner)  # now there is one
    assert role_of(owner) == "member" and role_of(member) == "owner"
