"""Every code an error body can carry is in `lib.api.errors.ERROR_CODES`, and the schema's `ErrorCode` enum is
that tuple: the clients make one error class per code from the enum, so a code answered but not declared would
reach them as an untyped error."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

from lib.api import errors
from lib.api.errors import ERROR_CODES

from .test_one_error_body import product_modules

ROOT = Path(__file__).resolve().parent.parent
# The calls that put a code into an error body, by the name they are called with.
BUILDERS = {"error_body", "error_json", "error_response", "refused_item", "RefusedEvent"}


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def _code_given(call: ast.Call) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "code":
            return keyword.value
    first = call.args[0] if call.args else None
    if _called_name(call) == "refused_item" and len(call.args) > 1:
        first = call.args[1]  # refused_item(index, code, ...)
    return first


def codes_answered(source: str) -> set[str]:
    """The literal codes a module answers with: given to an error-body builder, or an error class's `code`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _called_name(node) in BUILDERS:
            code = _code_given(node)
            if isinstance(code, ast.Constant) and isinstance(code.value, str):
                found.add(code.value)
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (
                    isinstance(statement, ast.Assign)
                    and [getattr(target, "id", None) for target in statement.targets] == ["code"]
                    and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, str)
                ):
                    found.add(statement.value.value)
    return found


def test_every_code_the_code_base_answers_with_is_declared():
    answered = set().union(*(codes_answered(path.read_text()) for path in product_modules()))
    # The scan reaches the modules that answer: the application errors, the throttle, the middleware's refusals.
    assert {"invalid", "limit_reached", "throttled", "length_required", "too_large", "server_error"} <= answered
    assert answered - set(ERROR_CODES) == set()


def test_every_status_drf_answers_maps_to_a_declared_code():
    assert set(errors._CODES.values()) | {errors.OTHER_ERROR} <= set(ERROR_CODES)


def test_the_schema_declares_error_codes_as_the_error_bodys_enum():
    schemas = yaml.safe_load((ROOT / "openapi.yaml").read_text())["components"]["schemas"]
    assert schemas["ErrorCode"]["enum"] == list(ERROR_CODES)
    assert schemas["Error"]["properties"]["error"] == {"$ref": "#/components/schemas/ErrorCode"}


def test_the_scan_finds_a_code_added_each_way():
    source = """
class Refusal(ApplicationError):
    code = "brand_new"

def refuse():
    return error_json("from_a_builder", "No.", status=400)

def item(index):
    return refused_item(index, "from_an_item", "No.", {})

EVENT = RefusedEvent(index=0, code="from_an_event", detail="No.", fields={})
NOT_A_CODE = serializers.ValidationError("No.", code="text")
"""
    found = codes_answered(source)
    assert found == {"brand_new", "from_a_builder", "from_an_item", "from_an_event"}
    assert found - set(ERROR_CODES) == found  # undeclared: the first test would fail on them
