"""The README's "Use it from your agent" examples run as written against the real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[3] / "README.md"


def examples() -> list[str]:
    text = README.read_text()
    section = text.split("## Use it from your agent", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_section_has_an_example_per_integration():
    found = examples()
    assert len(found) == 4
    assert all(
        name in "".join(found) for name in ("Archivist(", "archivist_mcp", "ArchivistStore", "ArchivistMemoryTool")
    )


EXPECTED = [
    ["person mona", "<memory>", "limit is at most 40."],
    ["Lunch is at noon", "<memory>"],
    ["Mona's dog is called Rex"],
    ["File created successfully at /memories/channel/workspace/standup.md", "/memories/channel/workspace/standup.md ("],
]


@pytest.mark.parametrize("index", range(4), ids=["python", "mcp", "langgraph", "anthropic"])
def test_each_example_runs_against_the_live_server(index, live_api, tmp_path):
    env = {**os.environ, "ARCHIVIST_URL": live_api.url, "ARCHIVIST_TOKEN": live_api.token}
    env.pop("ANTHROPIC_API_KEY", None)  # no model here: the example runs the tool itself
    script = tmp_path / "example.py"
    script.write_text(examples()[index])
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    for expected in EXPECTED[index]:
        assert expected in done.stdout, done.stdout
