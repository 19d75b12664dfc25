"""Docstrings in product code are a sentence or two (ten lines at most); the why goes in a `#` comment by the code."""

from __future__ import annotations

import ast

from tests.product_code import product_files

MOST_LINES = 10
# Files other branches of the same work are shortening now; emptied once they have merged.
NOT_YET: set[str] = set()


def long_docstrings(files) -> dict[str, list[str]]:
    """Each file's docstrings over `MOST_LINES` lines (the string's span, quotes included), as `name:line`."""
    found = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text())
        long = [
            f"{getattr(node, 'name', '<module>')}:{node.body[0].lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and ast.get_docstring(node, clean=False) is not None
            and node.body[0].end_lineno - node.body[0].lineno + 1 > MOST_LINES
        ]
        if long:
            found[name] = long
    return found


def test_no_product_docstring_runs_past_ten_lines():
    found = long_docstrings(product_files())
    assert {name: where for name, where in found.items() if name not in NOT_YET} == {}


def test_every_file_not_yet_short_still_has_a_long_one():
    # The list only shrinks: a file shortened (or gone) leaves it.
    assert NOT_YET - set(long_docstrings(product_files())) == set()


def test_the_check_sees_a_long_docstring(tmp_path):
    # Positive control: an eleven-line docstring is caught at any depth, ten lines are not, tests are not read.
    eleven = '"""One.\n' + "more\n" * 9 + '"""'
    ten = '"""One.\n' + "more\n" * 8 + '"""'
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "rules.py").write_text(f"{ten}\n\nclass Rule:\n    def check(self):\n        {eleven}\n")
    (tmp_path / "app" / "tests").mkdir()
    (tmp_path / "app" / "tests" / "test_rules.py").write_text(f"{eleven}\n")
    assert long_docstrings(product_files(tmp_path)) == {"app/rules.py": ["check:14"]}
