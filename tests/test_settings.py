"""Settings come from the environment through typed helpers that fail loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_choice, env_int

ROOT = Path(__file__).resolve().parent.parent


def test_typed_helpers_refuse_malformed_values_by_name(monkeypatch):
    monkeypatch.setenv("ARCHIVIST_X", "maybe")
    with pytest.raises(ImproperlyConfigured, match="ARCHIVIST_X"):
        env_bool("ARCHIVIST_X", False)
    monkeypatch.setenv("ARCHIVIST_X", "twelve")
    with pytest.raises(ImproperlyConfigured, match="ARCHIVIST_X"):
        env_int("ARCHIVIST_X", 1)
    monkeypatch.setenv("ARCHIVIST_X", "-3")
    with pytest.raises(ImproperlyConfigured, match="minimum"):
        env_int("ARCHIVIST_X", 1, minimum=0)
    monkeypatch.setenv("ARCHIVIST_X", "gpu")
    with pytest.raises(ImproperlyConfigured, match="local"):
        env_choice("ARCHIVIST_X", "local", ("local", "none"))
    monkeypatch.setenv("ARCHIVIST_X", "on")
    assert env_bool("ARCHIVIST_X", False) is True


def _production(**env) -> subprocess.CompletedProcess:
    base = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DATABASE_URL": "postgres://archivist@db.invalid/archivist",
        "REDIS_URL": "redis://redis.invalid:6379/0",
        "ARCHIVIST_DATA_DIR": os.environ["ARCHIVIST_DATA_DIR"],
    }
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_refuses_a_development_secret_key():
    result = _production(DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_production_refuses_debug():
    result = _production(DJANGO_DEBUG="1", DJANGO_SECRET_KEY="k" * 64)
    assert result.returncode != 0
    assert "DJANGO_DEBUG" in result.stderr


def test_production_starts_with_a_strong_key_and_debug_off():
    result = _production(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="k" * 64)
    assert result.returncode == 0, result.stderr
