"""No two top-level definitions in the server's product code share a name, so a name says which concept it is."""

from __future__ import annotations

import ast
from collections import defaultdict

from tests.product_code import product_files

# Django finds a management command by `Command`, and a script's entry point is `main`, by convention.
ALLOWED = {"Command", "main"}
# Names other branches of the same work are renaming now; emptied once they have merged.
NOT_YET: set[str] = set()


def shared_names(files) -> dict[str, list[str]]:
    """Public top-level functions and classes defined in more than one module, with those modules.

    A leading underscore keeps a name inside its module, so only public names are compared."""
    where = defaultdict(list)
    for name, path in files.items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith(
                "_"
            ):
                where[node.name].append(name)
    return {name: sorted(modules) for name, modules in where.items() if len(modules) > 1 and name not in ALLOWED}


def test_no_two_top_level_definitions_share_a_name():
    # The clients are left out: they ship byte copies of lib/text.py and lib/fenced_block.py on purpose.
    shared = shared_names(product_files(clients=False))
    assert {name: modules for name, modules in shared.items() if name not in NOT_YET} == {}


def test_every_name_not_yet_renamed_is_still_shared():
    # The list only shrinks: a name renamed leaves it.
    assert NOT_YET - set(shared_names(product_files(clients=False))) == set()


def test_the_check_sees_a_shared_name(tmp_path):
    # Positive control: a public name in two modules is caught; allowed and private names, and nested ones, are not.
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "one.py").write_text("def fact_line(): ...\ndef _helper(): ...\nclass Command: ...\n")
    (tmp_path / "app" / "two.py").write_text("class fact_line: ...\ndef _helper(): ...\ndef main(): ...\n")
    (tmp_path / "app" / "three.py").write_text(
        "class Command: ...\ndef main(): ...\ndef outer():\n    def fact_line(): ...\n"
    )
    assert shared_names(product_files(tmp_path)) == {"fact_line": ["app/one.py", "app/two.py"]}
