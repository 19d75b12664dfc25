"""The committed `openapi.yaml` is the schema the code serves: the test command fails when they differ."""

from __future__ import annotations

import difflib
from pathlib import Path

import yaml
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


def test_every_operation_has_its_own_stable_id_and_description():
    schema = yaml.safe_load(COMMITTED.read_text())
    operations = [op for path in schema["paths"].values() for op in path.values() if isinstance(op, dict)]
    ids = [op["operationId"] for op in operations]
    assert len(ids) == len(set(ids))
    descriptions = [op.get("description", "") for op in operations]
    assert all(descriptions), [op["operationId"] for op in operations if not op.get("description")]
    assert len(set(descriptions)) == len(descriptions), "operations share a description"
