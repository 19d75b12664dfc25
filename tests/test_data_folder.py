"""A management command pointed at a data folder with no migrated database says where it looked, and creates nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(ARCHIVIST_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="config.settings.dev", HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_command_in_an_empty_data_folder_names_it_and_creates_no_database(tmp_path):
    empty = tmp_path / "elsewhere"
    result = manage("create_org", "acme", data_dir=empty)
    assert result.returncode == 2, result.stderr
    assert str(empty / "pg") in result.stderr
    assert "ARCHIVIST_DATA_DIR" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (empty / "pg").exists()


@pytest.mark.slow
def test_a_command_beside_an_unmigrated_database_says_so(db):
    # The suite's own data folder holds a running PostgreSQL whose `archivist` database is never migrated.
    folder = Path(settings.DATA_DIR)
    result = manage("create_org", "acme", data_dir=folder)
    assert result.returncode == 2, result.stderr
    assert "never been migrated" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_still_runs_anywhere(tmp_path):
    result = manage("help", data_dir=tmp_path / "nowhere")
    assert result.returncode == 0, result.stderr
    assert "migrate" in result.stdout
