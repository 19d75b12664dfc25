"""accounts holds no threads flag kept only for recall's planning: the column and the trigger that set it are gone,
and the owners' switch for episodes stays."""

from __future__ import annotations

import importlib

from django.db import connection, transaction

from accounts.models import Organisation

OLD_TRIGGER = importlib.import_module("threads.migrations.0003_organisation_has_threads").MARK_ORGANISATION_TRIGGER


def organisation_columns() -> set[str]:
    with connection.cursor() as cursor:
        return {
            column.name for column in connection.introspection.get_table_description(cursor, "accounts_organisation")
        }


def threads_triggers() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = 'threads_thread'::regclass AND NOT tgisinternal")
        return {name for (name,) in cursor.fetchall()}


def test_the_organisation_has_no_threads_planning_column(db):
    assert "has_threads" not in organisation_columns()
    assert "has_threads" not in {field.name for field in Organisation._meta.get_fields()}
    assert "thread_episodes" in organisation_columns()  # control: the owners' switch is a product setting


def test_creating_a_thread_writes_nothing_to_accounts(db):
    assert "threads_mark_organisation" not in threads_triggers()
    # Positive control: the check sees the old trigger when it is there.
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(OLD_TRIGGER)
        assert "threads_mark_organisation" in threads_triggers()
        transaction.set_rollback(True)
    assert "threads_mark_organisation" not in threads_triggers()
