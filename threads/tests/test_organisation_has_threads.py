"""Issue 15: an organisation's first thread marks it (`Organisation.has_threads`), set by the database in the
thread's own transaction whoever inserts it, so recall can leave its thread-neighbour walk out until then."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection, transaction

from accounts.models import Organisation
from tenancy.context import tenant_activate
from tenancy.sql import APP_ROLE
from threads import sql
from threads.models import Thread

FROZEN = importlib.import_module("threads.migrations.0003_organisation_has_threads")


def has_threads(org) -> bool:
    return Organisation.objects.values_list("has_threads", flat=True).get(pk=org.pk)


def test_an_organisation_starts_without_threads(org):
    assert has_threads(org) is False


def test_the_first_thread_ingested_marks_its_organisation_only(post_events, dm_with, org, other_org):
    post_events("T-1", [("mona", "hello")], place=dm_with)
    assert has_threads(org) is True
    assert has_threads(other_org) is False  # control: another tenant's flag is its own


def test_a_thread_inserted_as_the_application_role_marks_it_in_the_same_transaction(org, other_org):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        tenant_activate(organisation_id=org.pk)
        # A plain INSERT, no service: the database sets the flag, not the code that usually creates threads.
        cursor.execute(
            "INSERT INTO threads_thread (organisation_id, external_id, last_sequence, consolidated_through,"
            " consolidation_error, episodes, episodes_expired, created_at, updated_at)"
            " VALUES (%s, 'raw', 0, 0, '', true, 0, now(), now())",
            [org.pk],
        )
        cursor.execute("SELECT has_threads FROM accounts_organisation WHERE id = %s", [org.pk])
        assert cursor.fetchone()[0] is True
    assert has_threads(org) is True and has_threads(other_org) is False


def test_a_rolled_back_thread_leaves_the_flag_as_it_was(org):
    with pytest.raises(RuntimeError), transaction.atomic():
        Thread.objects.create(organisation=org, external_id="gone")
        assert has_threads(org) is True  # positive control: set inside the thread's transaction
        raise RuntimeError("roll back")
    assert has_threads(org) is False


def test_the_migration_marks_organisations_that_had_threads_before_it(org, other_org):
    Thread.objects.create(organisation=org, external_id="before")
    Organisation.objects.filter(pk__in=[org.pk, other_org.pk]).update(has_threads=False)  # as before the trigger
    with connection.cursor() as cursor:
        cursor.execute(FROZEN.MARK_EXISTING)
    assert has_threads(org) is True
    assert has_threads(other_org) is False  # control: no thread, no mark


@pytest.mark.parametrize("name", ["MARK_ORGANISATION_TRIGGER", "DROP_MARK_ORGANISATION_TRIGGER", "MARK_EXISTING"])
def test_the_live_sql_is_the_frozen_text_to_the_byte(name):
    assert getattr(sql, name) == getattr(FROZEN, name)
