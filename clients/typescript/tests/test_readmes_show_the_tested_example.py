"""The READMEs show the example a test runs (packages/client/examples/quickstart.ts, run by the client's own
tests against the live server): the client's README shows it whole, the main README its beginning."""

from __future__ import annotations

import re
from pathlib import Path

from typescript_workspace import PACKAGES, WORKSPACE

EXAMPLE = PACKAGES / "client" / "examples" / "quickstart.ts"


def ts_blocks(readme: Path) -> list[str]:
    return re.findall(r"```ts\n(.*?)```", readme.read_text(), flags=re.S)


def example_code() -> str:
    """The example without its opening comment (how to run it, which the README says in prose)."""
    lines = EXAMPLE.read_text().splitlines(keepends=True)
    while lines and lines[0].startswith("//"):
        lines.pop(0)
    return "".join(lines)


def test_the_client_readme_shows_the_example_whole():
    assert example_code() in ts_blocks(PACKAGES / "client" / "README.md")


def test_the_main_readme_shows_the_examples_beginning():
    # Another package's block may stand beside it; one block is the example's first lines (five or more, so an
    # empty block does not pass for it).
    blocks = ts_blocks(WORKSPACE.parents[1] / "README.md")
    assert any(example_code().startswith(block) and block.count("\n") >= 5 for block in blocks), blocks
