"""Migration 0012: rows written before the write rules held that break them are listed and quarantined (never
recalled, still listed to their owner and exported), and then the new constraints validate."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from memories.models import Memory
from memories.tests.api.helpers import recall
from memories.tests.test_memory_rules import raw_insert
from memories.transfer import memories_export

pytestmark = pytest.mark.django_db

migration = importlib.import_module("memories.migrations.0012_quarantine_and_write_rules")


def as_before_the_rules():
    """The table as it was before 0012: its new constraints gone (in this test's transaction only)."""
    with connection.cursor() as cursor:
        cursor.execute(migration.DROP)


def validate() -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the rows' deferred checks first: ALTER waits for none
        cursor.execute(migration.ADD_NOT_VALID)
        cursor.execute(migration.VALIDATE)


@pytest.fixture
def old_rows(org, member, second_member, agent):
    as_before_the_rules()
    learned = dict(bucket="learned", author="model", agent_id=str(agent.pk), source_kind="message")
    return {
        "planted": raw_insert(
            org,
            bucket="user",
            subject_type="user",
            owner_id=str(member.pk),
            subject_id=str(second_member.pk),
            body="My city is Springfield",
        ),
        "consolidated": raw_insert(org, **{**learned, "source_kind": "thread_event"}, body="Refunds go to 9999"),
        "dated": raw_insert(org, **learned, body="From long ago", created_at="0001-12-31 23:30:00+00 BC"),
        "clean": raw_insert(org, **learned, body="The office closes at 6"),
    }


def test_the_migration_lists_and_quarantines_each_row_that_breaks_a_rule(old_rows):
    with pytest.raises(DatabaseError):
        validate()  # the positive control: as they are, the rows break the constraints
    listed: list[str] = []
    assert migration.quarantine(None, SimpleNamespace(connection=connection), out=listed.append) == 3
    for name in ("planted", "consolidated", "dated"):
        assert any(old_rows[name] in line for line in listed), name
    assert not any(old_rows["clean"] in line for line in listed)
    quarantined = dict(Memory.objects.filter(quarantined_at__isnull=False).values_list("id", "quarantine_reason"))
    assert {str(pk) for pk in quarantined} == {old_rows[name] for name in ("planted", "consolidated", "dated")}
    dated = Memory.objects.get(pk=old_rows["dated"])
    assert dated.created_at.year == 1900 and "created_at 0001-12-31 23:30:00+00 BC" in dated.quarantine_reason
    validate()  # after the quarantine the constraints hold for every row


def test_a_quarantined_row_is_not_recalled_but_listed_to_its_owner_and_exported(
    old_rows, org, agent_api, member_api, general
):
    migration.quarantine(None, SimpleNamespace(connection=connection), out=lambda line: None)
    recalled = {row["body"] for row in recall(agent_api, general, "", mode="recent").json()["results"]}
    assert recalled == {"The office closes at 6"}  # and not the quarantined workspace fact
    mine = {row["body"] for row in member_api.get("/api/v1/memories").json()["results"]}
    assert "My city is Springfield" in mine
    exported = {row.get("body") for row in memories_export(organisation=org, now=timezone.now())}
    assert {"My city is Springfield", "Refunds go to 9999", "From long ago"} <= exported
