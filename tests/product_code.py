"""The product code the guard tests read: `.py` files outside migrations/, tests/ and bench/, conftest.py left out."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Folders that hold no product code: tests, benchmarks and frozen migrations by the rule; the rest are not ours.
NOT_PRODUCT = {"migrations", "tests", "bench", "node_modules", "__pycache__", "var", "static", "templates", "docs"}


def product_files(root: Path = ROOT, *, clients: bool = True) -> dict[str, Path]:
    """Every product module under `root`, by its path relative to it (`memories/scopes.py`)."""
    found = {}
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name not in NOT_PRODUCT and not name.startswith("."))
        here = Path(folder)
        if not clients and here.relative_to(root).parts[:1] == ("clients",):
            subfolders[:] = []
            continue
        for name in names:
            if name.endswith(".py") and name != "conftest.py":
                found[(here / name).relative_to(root).as_posix()] = here / name
    return found
