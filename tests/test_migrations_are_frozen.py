"""Migrations carry their SQL as text: editing a live module must never change what a fresh database gets."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("accounts", "memories", "admissions", "threads", "tenancy", "web")
# `import memories.models` is what makemigrations writes for custom expressions; those are model code.
LIVE_IMPORT = re.compile(rf"^from ({'|'.join(APPS)})(\.[\w.]+)? import ", re.M)


def test_no_migration_imports_a_live_module_of_the_project():
    offenders = {
        str(path.relative_to(ROOT)): LIVE_IMPORT.findall(path.read_text())
        for app in APPS
        for path in sorted((ROOT / app / "migrations").glob("0*.py"))
        if LIVE_IMPORT.search(path.read_text())
    }
    assert offenders == {}


def test_the_check_sees_a_live_import():
    # Positive control: the pattern catches the imports the migrations used to have.
    assert LIVE_IMPORT.search("from memories import turn_sql\n")
    assert LIVE_IMPORT.search("from tenancy import sql\n")
    assert not LIVE_IMPORT.search("import memories.models\n")
