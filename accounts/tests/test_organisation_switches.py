"""An organisation's episode switch: on by default, changed by an owner only, each change logged with who made it."""

from __future__ import annotations

import logging

import pytest
from django.core.exceptions import PermissionDenied

from accounts.models import Organisation
from accounts.organisation_switches import organisation_set_thread_episodes


def _changes(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "archivist.organisations"]


def test_episodes_are_on_by_default_and_an_owner_turns_them_off_and_on(org, owner, caplog):
    assert Organisation.objects.get(pk=org.pk).thread_episodes is True
    with caplog.at_level(logging.INFO, logger="archivist.organisations"):
        organisation_set_thread_episodes(organisation=org, keep=False, actor=owner)
        assert Organisation.objects.get(pk=org.pk).thread_episodes is False and org.thread_episodes is False
        organisation_set_thread_episodes(organisation=org, keep=False, actor=owner)  # no change: not logged
        organisation_set_thread_episodes(organisation=org, keep=True, actor=owner)
    assert Organisation.objects.get(pk=org.pk).thread_episodes is True
    assert _changes(caplog) == [
        f"organisation {org.slug}: thread episodes turned off by {owner.username}",
        f"organisation {org.slug}: thread episodes turned on by {owner.username}",
    ]


def test_a_member_or_an_owner_of_another_organisation_cannot_change_it(org, other_org, member, outsider, caplog):
    with caplog.at_level(logging.INFO, logger="archivist.organisations"):
        for actor in (member, outsider):
            with pytest.raises(PermissionDenied):
                organisation_set_thread_episodes(organisation=org, keep=False, actor=actor)
    assert Organisation.objects.get(pk=org.pk).thread_episodes is True
    assert _changes(caplog) == []
