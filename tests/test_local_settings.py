"""`make run` and `manage.py` default to the local settings: DEBUG off, a secret key made once into the data folder,
HTTPS's cookies, redirect and HSTS only behind an https public URL; `config.settings.dev` keeps DEBUG on."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow
SHOWN = ("DEBUG", "SECRET_KEY", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_SSL_REDIRECT")
PRINT = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    f"print(json.dumps({{name: getattr(s, name) for name in {SHOWN!r} + ('SECURE_HSTS_SECONDS', 'ALLOWED_HOSTS')}}))"
)


def environment(data_dir: Path, **env: str) -> dict[str, str]:
    base = {
        "PATH": os.environ["PATH"],
        "DATABASE_URL": "postgres://archivist@db.invalid/archivist",
        "REDIS_URL": "redis://redis.invalid:6379/0",
        "ARCHIVIST_DATA_DIR": str(data_dir),
    }
    return {**base, **env}


def settings_of(data_dir: Path, **env: str) -> dict:
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    done = subprocess.run(
        [sys.executable, "-c", PRINT], cwd=ROOT, env=environment(data_dir, **env), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_manage_py_uses_the_local_settings_by_default(tmp_path):
    done = subprocess.run(
        [sys.executable, "manage.py", "diffsettings", "--all"],
        cwd=ROOT,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "SETTINGS_MODULE = 'config.settings.local'" in done.stdout


def test_debug_is_off_and_the_secret_key_is_made_once_into_the_data_folder(tmp_path):
    first = settings_of(tmp_path)
    assert first["DEBUG"] is False
    key_file = tmp_path / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert first["SECRET_KEY"] == key_file.read_text().strip() and len(first["SECRET_KEY"]) >= 50
    assert settings_of(tmp_path)["SECRET_KEY"] == first["SECRET_KEY"]  # the next start reads the same key
    assert settings_of(tmp_path, DJANGO_SECRET_KEY="k" * 64)["SECRET_KEY"] == "k" * 64


def test_https_settings_apply_only_behind_an_https_public_url(tmp_path):
    plain = settings_of(tmp_path)
    assert not any(plain[name] for name in SHOWN[2:]) and plain["SECURE_HSTS_SECONDS"] == 0
    behind_http = settings_of(tmp_path, ARCHIVIST_PUBLIC_URL="http://memory.internal:8000")
    assert not any(behind_http[name] for name in SHOWN[2:]) and "memory.internal" in behind_http["ALLOWED_HOSTS"]
    public = settings_of(tmp_path, ARCHIVIST_PUBLIC_URL="https://memory.example.com")
    assert all(public[name] for name in SHOWN[2:]) and public["SECURE_HSTS_SECONDS"] > 0
    assert "memory.example.com" in public["ALLOWED_HOSTS"]


def test_the_dev_settings_keep_debug_on_and_the_development_key(tmp_path):
    dev = settings_of(tmp_path, DJANGO_SETTINGS_MODULE="config.settings.dev")
    assert dev["DEBUG"] is True and dev["SECRET_KEY"].startswith("dev-")
    assert not (tmp_path / "secret_key").exists()
