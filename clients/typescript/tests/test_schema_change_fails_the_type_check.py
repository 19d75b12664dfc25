"""The client's types come from the committed schema: a response field renamed in a scratch copy of
`openapi.yaml` fails `tsc` on the code that reads it, naming the field; the copy left as it is passes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typescript_workspace import WORKSPACE, require_toolchain

SCHEMA = WORKSPACE.parents[1] / "openapi.yaml"
CLIENT = WORKSPACE / "packages" / "client"
# RememberedOutput.scope: what `remember` answers, read by the client's tests and its README's example.
COMPONENT, FIELD = "RememberedOutput", "scope"


def scratch_client(root: Path) -> Path:
    """A copy of the workspace's client package (sources, tests, example, build script) beside its node_modules."""
    (root / "packages").mkdir(parents=True)
    shutil.copy(WORKSPACE / "tsconfig.base.json", root)
    (root / "node_modules").symlink_to(WORKSPACE / "node_modules")
    copy = root / "packages" / "client"
    shutil.copytree(CLIENT, copy, ignore=shutil.ignore_patterns("dist", "generated", "node_modules"))
    return copy


def type_check(client: Path, schema: Path) -> subprocess.CompletedProcess:
    """Generates the types from `schema` into the copy, then type-checks the copy."""
    env = {"ARCHIVIST_SCHEMA": str(schema), "PATH": os.environ["PATH"]}
    generated = subprocess.run(["node", "scripts/generate.mjs"], cwd=client, env=env, capture_output=True, text=True)
    assert generated.returncode == 0, generated.stderr
    tsc = WORKSPACE / "node_modules" / ".bin" / "tsc"
    return subprocess.run(
        [str(tsc), "--noEmit", "-p", "."], cwd=client, env=env, capture_output=True, text=True, timeout=300
    )


def renamed(schema: dict, component: str, field: str) -> dict:
    target = schema["components"]["schemas"][component]
    target["properties"] = {
        (f"{field}_renamed" if name == field else name): value for name, value in target["properties"].items()
    }
    target["required"] = [f"{field}_renamed" if name == field else name for name in target.get("required", [])]
    return schema


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    require_toolchain()
    return scratch_client(tmp_path_factory.mktemp("typescript"))


def test_the_unchanged_schema_type_checks(scratch, tmp_path):
    copy = tmp_path / "openapi.yaml"
    shutil.copy(SCHEMA, copy)
    checked = type_check(scratch, copy)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_renamed_response_field_fails_the_type_check_naming_it(scratch, tmp_path):
    copy = tmp_path / "openapi.yaml"
    copy.write_text(yaml.safe_dump(renamed(yaml.safe_load(SCHEMA.read_text()), COMPONENT, FIELD), sort_keys=False))
    checked = type_check(scratch, copy)
    assert checked.returncode != 0
    assert f"Property '{FIELD}' does not exist" in checked.stdout, checked.stdout
