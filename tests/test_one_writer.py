"""One module inserts memory rows: `memories/writer.py`. No other product module builds a `Memory`, bulk-creates
or creates one through its manager, or inserts one with `save(force_insert=True)` or `insert_statement`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WRITER = "memories/writer.py"
LEFT_OUT = {".venv", "bench", "clients", "migrations", "tests", "node_modules", "var"}
MANAGER_INSERTS = {"bulk_create", "create", "get_or_create", "update_or_create"}


def product_modules() -> list[Path]:
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if not LEFT_OUT & set(path.relative_to(ROOT).parts) and path.name != "conftest.py"
    )


def _is_memory(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Name) and node.id == "Memory"


def _memory_names(tree: ast.AST) -> set[str]:
    """Names bound to a `Memory`: built by `Memory(...)`, or annotated `Memory` (a parameter, a variable)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _is_memory(node.value.func):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.arg) and _is_memory(node.annotation):
            names.add(node.arg)
        elif isinstance(node, ast.AnnAssign) and _is_memory(node.annotation) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def memory_inserts(source: str) -> list[str]:
    """Each place `source` builds or inserts a memory row, as `line: what`."""
    tree = ast.parse(source)
    rows = _memory_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if _is_memory(func):
            found.append(f"{node.lineno}: Memory(...)")
        elif isinstance(func, ast.Attribute) and func.attr in MANAGER_INSERTS:
            owner = func.value
            if isinstance(owner, ast.Attribute) and owner.attr == "objects" and _is_memory(owner.value):
                found.append(f"{node.lineno}: Memory.objects.{func.attr}")
        if isinstance(func, ast.Attribute) and func.attr == "save":
            forced = any(kw.arg == "force_insert" for kw in node.keywords)
            if forced and isinstance(func.value, ast.Name) and func.value.id in rows:
                found.append(f"{node.lineno}: {func.value.id}.save(force_insert=True)")
        if isinstance(func, ast.Name) and func.id == "insert_statement" and node.args:
            row = node.args[0]
            if (isinstance(row, ast.Name) and row.id in rows) or (isinstance(row, ast.Call) and _is_memory(row.func)):
                found.append(f"{node.lineno}: insert_statement(<Memory>)")
    return found


def test_only_the_writer_inserts_memory_rows():
    modules = product_modules()
    assert len(modules) > 150  # the scan sees the product, not an empty tree
    inserting = {
        path.relative_to(ROOT).as_posix(): hits for path in modules if (hits := memory_inserts(path.read_text()))
    }
    assert set(inserting) == {WRITER}, inserting


def test_positive_control_the_writer_itself_is_seen_inserting():
    hits = memory_inserts((ROOT / WRITER).read_text())
    assert any("Memory(...)" in hit for hit in hits)
    assert any("Memory.objects.bulk_create" in hit for hit in hits)
    assert any("memory.save(force_insert=True)" in hit for hit in hits)
    assert any("insert_statement(<Memory>)" in hit for hit in hits)


@pytest.mark.parametrize(
    "scratch",
    [
        "Memory.objects.bulk_create(rows)",
        "Memory.objects.create(body='x')",
        "row = Memory(body='x')",
        "def keep(memory: Memory):\n    memory.save(force_insert=True)",
        "def keep(memory: Memory):\n    sql, params = insert_statement(memory)",
        "sql, params = insert_statement(Memory(body='x'))",
    ],
)
def test_positive_control_a_scratch_module_that_inserts_a_memory_is_caught(scratch):
    assert memory_inserts(scratch)


@pytest.mark.parametrize(
    "scratch",
    [
        "MemoryAudit.objects.bulk_create(receipts)",
        "def keep(audit: MemoryAudit):\n    audit.save(force_insert=True)",
        "sql, params = insert_statement(claim, ignore_conflicts=True)",
        "Memory.objects.filter(pk=1).exists()",
    ],
)
def test_other_rows_and_reads_are_not_mistaken_for_memory_inserts(scratch):
    assert memory_inserts(scratch) == []
