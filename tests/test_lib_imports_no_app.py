"""lib/ is what every app shares, so it imports no app (nor config): a type named only under TYPE_CHECKING is
allowed, and an app's model is found through a setting (`IDEMPOTENCY_KEY_MODEL`, as `AUTH_USER_MODEL`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = {path.parent.name for path in ROOT.glob("*/apps.py")} | {"config"}


def app_imports(source: str) -> list[str]:
    """The apps a module imports when it runs (imports under `if TYPE_CHECKING:` left out)."""
    tree = ast.parse(source)
    for_types_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in for_types_only:
            continue
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] in APPS]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in APPS:
            found.append(node.module or "")
    return found


def test_no_lib_module_imports_an_app():
    found = {
        path.relative_to(ROOT).as_posix(): names
        for path in sorted((ROOT / "lib").rglob("*.py"))
        if (names := app_imports(path.read_text()))
    }
    assert found == {}


def test_the_scan_finds_an_app_import_and_lets_a_type_only_one_pass():
    assert {"memories", "accounts", "threads"} <= APPS  # the apps are found where they live
    source = """
from typing import TYPE_CHECKING
import memories.models
from accounts.auth import Principal
if TYPE_CHECKING:
    from threads.models import Thread

def later():
    from config.settings import base
"""
    assert app_imports(source) == ["memories.models", "accounts.auth", "config.settings"]
