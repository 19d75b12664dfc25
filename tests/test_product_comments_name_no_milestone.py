"""Product code names no issue number, tuning round or file outside the repository: the code says why, not when."""

from __future__ import annotations

import re

from tests.product_code import product_files

MILESTONE = re.compile(r"issue [0-9]|round (one|two|three|four|five|six)|RECIPES", re.IGNORECASE)
# Files other branches of the same work are cleaning now; emptied once they have merged.
NOT_YET: set[str] = set()


def milestone_lines(files) -> dict[str, list[str]]:
    """Each file's lines that name a milestone, by the file's relative path; files without one are left out."""
    found = {}
    for name, path in files.items():
        lines = [line.strip() for line in path.read_text().splitlines() if MILESTONE.search(line)]
        if lines:
            found[name] = lines
    return found


def test_no_product_module_names_a_milestone():
    found = milestone_lines(product_files())
    assert {name: lines for name, lines in found.items() if name not in NOT_YET} == {}


def test_every_file_not_yet_clean_still_names_one():
    # The list only shrinks: a file cleaned (or gone) leaves it.
    assert NOT_YET - set(milestone_lines(product_files())) == set()


def test_the_check_sees_a_milestone(tmp_path):
    # Positive control: each form is caught, in a comment or a docstring, and plain words are not.
    for text in ("# Issue 16: episodes", '"""Faster (round two)."""', "# measured in RECIPES.md", "# see issue 4"):
        assert MILESTONE.search(text), text
    assert not MILESTONE.search('"point", "issue", "worry"')
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "rules.py").write_text("x = 1  # kept since round three\n")
    (tmp_path / "app" / "migrations").mkdir()
    (tmp_path / "app" / "migrations" / "0001_issue_5.py").write_text("# Issue 5\n")
    assert milestone_lines(product_files(tmp_path)) == {"app/rules.py": ["x = 1  # kept since round three"]}
