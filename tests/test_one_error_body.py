"""One function builds the error body: no product module but lib/api/errors.py writes `{"error": …, "detail": …}`
by hand; the schema's examples of that shape are the only others, each named here."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THE_BUILDER = "lib/api/errors.py"
# Examples the schema shows, not answers: (module, where the literal is).
SCHEMA_EXAMPLES = {
    ("lib/api/docs.py", "ERROR_EXAMPLE"),
    ("config/schema.py", "ERROR_SCHEMA"),
    ("threads/api.py", "REFUSED_EVENT_EXAMPLE"),
    ("threads/api.py", "ThreadEventsApi.post@decorator"),
    ("memories/api/batch.py", "MemoryBatchApi.post@decorator"),
}
# The MCP client hands the server's refusal on to a model as it came; a client package cannot import lib.
CLIENT_COPIES = {("clients/mcp/archivist_mcp/results.py", "refusal")}
ALLOWED = SCHEMA_EXAMPLES | CLIENT_COPIES


def product_modules() -> list[Path]:
    """Product code: .py files outside tests, bench, migrations and the virtualenv."""
    skipped = {".venv", "bench", "tests", "migrations", "node_modules", "var"}
    return [
        path
        for path in sorted(ROOT.rglob("*.py"))
        if not skipped & set(path.relative_to(ROOT).parts)
        and path.name != "conftest.py"
        and not path.name.startswith("test_")
    ]


def is_error_body(node: ast.AST) -> bool:
    """A dict literal, or a `dict(...)` call, holding both `error` and `detail`."""
    if isinstance(node, ast.Dict):
        keys = {key.value for key in node.keys if isinstance(key, ast.Constant)}
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        keys = {keyword.arg for keyword in node.keywords}
    else:
        return False
    return {"error", "detail"} <= keys


def error_bodies(source: str) -> list[str]:
    """Where each hand-written error body sits: the dotted name of the statement holding it (a decorator's
    literal is `<function>@decorator`)."""
    found: list[str] = []

    def visit(node: ast.AST, where: str) -> None:
        if is_error_body(node):
            found.append(where)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = f"{where}.{node.name}" if where else node.name
            for decorator in node.decorator_list:
                visit(decorator, f"{inner}@decorator")
            for child in node.body:
                visit(child, inner)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and not where:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [target.id for target in targets if isinstance(target, ast.Name)]
            where = names[0] if names else where
        for child in ast.iter_child_nodes(node):
            visit(child, where)

    visit(ast.parse(source), "")
    return found


def hand_written_bodies() -> set[tuple[str, str]]:
    found = set()
    for path in product_modules():
        module = path.relative_to(ROOT).as_posix()
        if module != THE_BUILDER:
            found |= {(module, where) for where in error_bodies(path.read_text())}
    return found


def test_only_lib_api_errors_builds_the_error_body():
    assert hand_written_bodies() - ALLOWED == set()


def test_every_allowance_named_here_is_still_there():
    # The positive control on the real tree: the scan finds each literal it allows, so an allowance never
    # outlives its literal and the scan is known to reach these modules.
    assert hand_written_bodies() >= ALLOWED


def test_the_scan_finds_an_error_body_written_by_hand():
    source = """
def refuse(message):
    return JsonResponse({"error": "invalid", "detail": message, "fields": {}}, status=400)

class Gate:
    def answer(self):
        return dict(error="throttled", detail="Too many.", fields={})

BODY = {"error": "x", "detail": "y"}
NOT_ONE = {"error": "x", "fields": {}}
"""
    assert error_bodies(source) == ["refuse", "Gate.answer", "BODY"]
    assert error_bodies('def ok():\n    return error_json("invalid", "no", status=400)\n') == []


def test_the_builder_itself_is_found_by_the_scan():
    assert error_bodies((ROOT / THE_BUILDER).read_text()) == ["error_body"]
