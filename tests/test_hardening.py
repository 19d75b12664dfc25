"""Hardening: production's cookies and HSTS, and the headers every answer carries, early refusals included."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parent.parent
SHOWN = (
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SESSION_COOKIE_HTTPONLY",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_CONTENT_TYPE_NOSNIFF",
    "X_FRAME_OPTIONS",
    "CONTENT_SECURITY_POLICY",
)


def production_settings(**env) -> dict:
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
        "DATABASE_URL": "postgres://archivist@db.invalid/archivist",
        "REDIS_URL": "redis://redis.invalid:6379/0",
        **env,
    }
    script = (
        "import json, django; django.setup(); from django.conf import settings; "
        f"print(json.dumps({{name: getattr(settings, name) for name in {SHOWN!r}}}))"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_cookies_are_secure_and_hsts_is_on_by_default_and_behind_a_setting():
    shown = production_settings()
    assert shown["SESSION_COOKIE_SECURE"] and shown["CSRF_COOKIE_SECURE"] and shown["SESSION_COOKIE_HTTPONLY"]
    assert shown["SECURE_SSL_REDIRECT"] and shown["SECURE_HSTS_SECONDS"] >= 31_536_000
    assert (
        "default-src 'self'" in shown["CONTENT_SECURITY_POLICY"]
        and "'unsafe-inline'" not in shown["CONTENT_SECURITY_POLICY"]
    )
    assert production_settings(DJANGO_HSTS_SECONDS="0")["SECURE_HSTS_SECONDS"] == 0


@pytest.mark.django_db
def test_every_answer_carries_the_security_headers_early_refusals_included(agent_with_token, member, settings):
    settings.MEMORY_API_RATE = "1/min"
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_with_token[1]}")
    page = Client()
    page.force_login(member)
    answers = {
        "api": api.get("/api/v1/memories"),
        "gate (429)": api.get("/api/v1/memories"),
        "nul guard (400)": Client().get("/api/v1/injections/x%00"),
        "page": page.get("/me/memories"),
        "not found": page.get("/no-such-page"),
        "anonymous api (401)": APIClient().get("/api/v1/memories"),
    }
    assert answers["gate (429)"].status_code == 429 and answers["nul guard (400)"].status_code == 400
    for name, response in answers.items():
        assert response["Content-Security-Policy"].startswith("default-src 'self'"), name
        assert response["X-Content-Type-Options"] == "nosniff", name
        assert response["Referrer-Policy"] == "same-origin", name
