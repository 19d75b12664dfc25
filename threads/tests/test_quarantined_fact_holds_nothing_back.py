"""A fact one person planted as another's "own fact" before the rule held is quarantined by migration 0012;
quarantined, it no longer holds back what that person later says as a conflict."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.db import connection

from memories.models import Memory
from memories.tests.test_memory_rules import raw_insert
from threads.conflicts import user_fact_keys_write
from threads.consolidation import thread_consolidate

pytestmark = pytest.mark.django_db

migration = importlib.import_module("memories.migrations.0012_quarantine_and_write_rules")


@pytest.mark.parametrize("quarantined", [False, True])
def test_a_quarantined_planted_fact_does_not_hold_back_its_subjects_statement(
    post_events, org, member, second_member, quarantined
):
    with connection.cursor() as cursor:
        cursor.execute(migration.DROP)  # the table as it was before the rules, in this test's transaction
    planted = raw_insert(
        org,
        bucket="user",
        subject_type="user",
        owner_id=str(member.pk),
        subject_id=str(second_member.pk),
        scope="person",
        scope_ref=str(second_member.pk),
        body="max's city is Springfield",
    )
    user_fact_keys_write(memories=[Memory.objects.get(pk=planted)])
    if quarantined:
        migration.quarantine(None, SimpleNamespace(connection=connection), out=lambda line: None)
    thread = post_events(
        "T-1", [("max", "My city is Leeds")], place={"channel": "D-max", "kind": "dm", "people": ["max"]}
    )
    result = thread_consolidate(thread_id=thread.pk)
    if quarantined:
        assert result.conflicts == [] and len(result.written) == 1
    else:
        assert len(result.conflicts) == 1  # the positive control: the planted fact held it back
