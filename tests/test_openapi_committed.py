"""The committed `openapi.yaml` is the schema the code serves: the test command fails when they differ."""

from __future__ import annotations

import difflib
from pathlib import Path

from django.core.management import call_command

COMMITTED = Path(__file__).resolve().parent.parent / "openapi.yaml"


def test_the_committed_schema_is_the_one_the_code_generates(tmp_path):
    generated = tmp_path / "openapi.yaml"
    call_command("spectacular", "--file", str(generated), "--validate", "--fail-on-warn")
    want, have = generated.read_text(), COMMITTED.read_text()
    if want != have:
        diff = "".join(
            list(difflib.unified_diff(have.splitlines(True), want.splitlines(True), "committed", "code"))[:80]
        )
        raise AssertionError(f"openapi.yaml differs from the code's schema; run `make schema` and commit it.\n{diff}")
