"""An erased row keeps no provenance text: its source ref, label and run id go with its body.

The database allows exactly that: on an erased row they may be emptied (then or later), and on a live row,
or to anything but empty, they never change (trigger `memories_immutable`). The source kind and the times stay.
"""

from __future__ import annotations

import importlib

import pytest
from django.db import IntegrityError, connection, transaction

from memories.db.triggers import IMMUTABLE_TRIGGER
from memories.models import ERASED_PROVENANCE, Memory
from memories.services import memory_redact

pytestmark = pytest.mark.django_db

PROVENANCE = {"source_ref": "msg-4471", "source_label": "DM with mona", "source_run_id": "run-mona-9"}


def raw_update(memory_id, sql_set: str) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE memories_memory SET {sql_set} WHERE id = %s", [str(memory_id)])


def erased_keeping_provenance(make_memory) -> Memory:
    """A row erased the way erasure worked before it emptied provenance: body gone, source text kept."""
    memory = make_memory(**PROVENANCE)
    raw_update(memory.pk, "body = '', embedding = NULL, redacted_at = now(), redaction_reason = 'asked'")
    memory.refresh_from_db()
    assert (memory.source_ref, memory.source_label, memory.source_run_id) == tuple(PROVENANCE.values())
    return memory


def test_erasing_a_row_empties_its_source_ref_label_and_run_id_and_keeps_its_kind(make_memory, member):
    memory = make_memory(**PROVENANCE)
    memory_redact(memory=memory, reason="asked", actor=member)
    memory.refresh_from_db()
    assert {name: getattr(memory, name) for name in ERASED_PROVENANCE} == dict.fromkeys(ERASED_PROVENANCE, "")
    assert memory.source_kind == "person" and memory.created_at is not None and memory.redacted_at is not None


@pytest.mark.parametrize("column", ERASED_PROVENANCE)
def test_the_database_lets_an_erased_row_lose_its_source_text_later(make_memory, column):
    memory = erased_keeping_provenance(make_memory)
    raw_update(memory.pk, f"{column} = ''")
    assert getattr(Memory.objects.get(pk=memory.pk), column) == ""


@pytest.mark.parametrize("column", ERASED_PROVENANCE)
def test_the_database_refuses_emptying_a_live_rows_source_text(make_memory, column):
    memory = make_memory(**PROVENANCE)
    with pytest.raises(IntegrityError, match="memories_immutable"):
        raw_update(memory.pk, f"{column} = ''")


@pytest.mark.parametrize("column", ERASED_PROVENANCE)
def test_the_database_refuses_rewriting_an_erased_rows_source_text(make_memory, column):
    memory = erased_keeping_provenance(make_memory)
    with pytest.raises(IntegrityError, match="memories_immutable"):
        raw_update(memory.pk, f"{column} = 'something else'")


def test_the_database_runs_the_trigger_the_live_module_spells():
    # The migration carries a frozen copy; this holds that it and memories/db/triggers.py say the same.
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'memories_guard_update'")
        (source,) = cursor.fetchone()
    assert source.strip() in IMMUTABLE_TRIGGER
    assert "erased AND NEW.source_label = ''" in source


def test_the_migration_empties_the_source_text_of_rows_erased_before_it_and_of_no_live_row(make_memory):
    migration = importlib.import_module("memories.migrations.0013_erasure_empties_provenance")
    erased = erased_keeping_provenance(make_memory)
    live = make_memory(**PROVENANCE)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(migration.EMPTY_ERASED_PROVENANCE)
    erased.refresh_from_db()
    live.refresh_from_db()
    assert (erased.source_ref, erased.source_label, erased.source_run_id) == ("", "", "")
    assert (live.source_ref, live.source_label, live.source_run_id) == tuple(PROVENANCE.values())
