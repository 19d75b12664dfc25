"""admissions/sql.py builds its triggers with lib.sql; the database got the migration's frozen text.

The two must say the same, or the live module describes a database nobody has.
"""

from __future__ import annotations

import importlib

import pytest

from admissions import sql

FROZEN = importlib.import_module("admissions.migrations.0001_initial")
SHARED = sorted(name for name in vars(FROZEN) if name.isupper() and isinstance(getattr(sql, name, None), str))


def test_the_check_compares_every_statement_the_migration_runs():
    # Positive control: an empty list would pass whatever the module said.
    assert SHARED == [
        "APPEND_ONLY_TRIGGER",
        "CLAIM_STATUS_VIEW",
        "DROP_APPEND_ONLY_TRIGGER",
        "DROP_CLAIM_STATUS_VIEW",
        "DROP_INSERT_GUARD_TRIGGER",
        "INSERT_GUARD_TRIGGER",
    ]


@pytest.mark.parametrize("name", SHARED)
def test_the_live_sql_is_the_frozen_text_to_the_byte(name):
    assert getattr(sql, name) == getattr(FROZEN, name)
