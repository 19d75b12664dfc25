"""An organisation's switches: episodes on by default and changed by an owner (or an operator), network
claims by an operator only; each change is an account audit row with who made it."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from accounts.models import AccountAudit, Organisation
from accounts.organisation_switches import organisation_set_system_recall, organisation_set_thread_episodes


def _changes(org) -> list[tuple]:
    rows = AccountAudit.objects.filter(organisation=org, action=AccountAudit.Action.SWITCH).order_by("id")
    return [(row.actor_id, row.person_id, row.detail) for row in rows]


def test_episodes_are_on_by_default_and_an_owner_turns_them_off_and_on(org, owner):
    assert Organisation.objects.get(pk=org.pk).thread_episodes is True
    organisation_set_thread_episodes(organisation=org, keep=False, actor=owner)
    assert Organisation.objects.get(pk=org.pk).thread_episodes is False and org.thread_episodes is False
    organisation_set_thread_episodes(organisation=org, keep=False, actor=owner)  # no change: not audited
    organisation_set_thread_episodes(organisation=org, keep=True, actor=owner)
    assert Organisation.objects.get(pk=org.pk).thread_episodes is True
    assert _changes(org) == [
        (owner.pk, None, {"switch": "thread_episodes", "on": False}),
        (owner.pk, None, {"switch": "thread_episodes", "on": True}),
    ]


def test_a_member_or_an_owner_of_another_organisation_cannot_change_it(org, other_org, member, outsider):
    for actor in (member, outsider):
        with pytest.raises(PermissionDenied):
            organisation_set_thread_episodes(organisation=org, keep=False, actor=actor)
    assert Organisation.objects.get(pk=org.pk).thread_episodes is True
    assert _changes(org) == []


def test_only_an_operator_opts_in_to_network_claims(org, owner, admin_user):
    with pytest.raises(PermissionDenied):
        organisation_set_system_recall(organisation=org, opt_in=True, actor=owner)
    assert _changes(org) == []
    organisation_set_system_recall(organisation=org, opt_in=True, actor=admin_user)
    assert Organisation.objects.get(pk=org.pk).system_recall_opt_in is True
    assert _changes(org) == [(admin_user.pk, None, {"switch": "system_recall_opt_in", "on": True})]
