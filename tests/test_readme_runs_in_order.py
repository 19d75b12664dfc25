"""The README is one path: the Quickstart's shell, then every integration example, pasted in order into one
terminal, each works against a live server (this session's gunicorn on the test database).

Every ```sh and ```python block from the Quickstart to the end of "Use it from your agent" runs, in the
README's order, in one bash session: the shell blocks as written, each Python block as a script. Lines that
`pip install` the integrations are left out (the test's virtualenv has them, editable). A background server a
block starts (`&`) is waited for, and stopped at the end.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from web.tests.browser import database_url

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow
README = ROOT / "README.md"
MARK = "@@README block"

# What each block prints that shows it worked, in the README's order.
EXPECTED = [
    ("sh", ['"display_name":"Mona"', "Prefers to be called Mo", '"turn_id":"turn-1"']),
    ("sh", []),  # installing the integrations (left out here)
    ("python", ["person mona", "['Max', 'Mona']", "['limit is at most 40.']"]),
    ("python", ["Lunch is at noon", "<memory>"]),
    ("sh", []),  # archivist-mcp over HTTP, in the background
    ("python", ["Lunch is at noon", "'error': 'invalid'", "'limit'"]),
    ("python", ["Mona's dog is called Rex"]),
    (
        "python",
        [
            "File created successfully at /memories/channel/workspace/standup.md",
            "/memories/channel/workspace/standup.md (",
        ],
    ),
]


def readme_blocks() -> list[tuple[str, str]]:
    text = README.read_text()
    path = text[text.index("### Quickstart") : text.index("**Bring memories in.**")]
    return re.findall(r"```(sh|python)\n(.*?)```", path, flags=re.S)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def session_script(blocks: list[tuple[str, str]], folder: Path) -> str:
    lines = ["set -eo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
    for index, (language, code) in enumerate(blocks):
        lines.append(f"echo '{MARK} {index}'")
        if language == "python":
            script = folder / f"block_{index}.py"
            script.write_text(code)
            lines.append(f'"$PYTHON" {script}')
            continue
        kept = [line for line in code.splitlines() if "pip install" not in line]
        lines += kept
        if any(line.rstrip().endswith("&") for line in kept):
            lines.append('until (exec 3<>"/dev/tcp/127.0.0.1/$MCP_PORT") 2>/dev/null; do sleep 0.2; done')
    return "\n".join(lines) + "\n"


def test_the_readme_has_the_blocks_the_path_expects():
    assert [language for language, _ in readme_blocks()] == [language for language, _ in EXPECTED]


def test_the_readme_blocks_run_in_order_against_a_live_server(gunicorn_server, transactional_db, tmp_path):
    env = {name: value for name, value in os.environ.items() if not name.startswith(("ARCHIVIST_", "ANTHROPIC_"))}
    env.update(
        ARCHIVIST_TEST_REDIS_WORKER=os.environ.get("ARCHIVIST_TEST_REDIS_WORKER", ""),
        DJANGO_SETTINGS_MODULE="config.settings.test",
        DATABASE_URL=database_url(connection.settings_dict),
        PORT=gunicorn_server.rsplit(":", 1)[1],
        MCP_PORT=str(free_port()),
        PYTHON=sys.executable,
        HF_HUB_OFFLINE="1",
    )
    script = tmp_path / "readme.sh"
    script.write_text(session_script(readme_blocks(), tmp_path))
    done = subprocess.run(["bash", str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    outputs = done.stdout.split(MARK)[1:]
    assert len(outputs) == len(EXPECTED)
    for index, (output, (_, expected)) in enumerate(zip(outputs, EXPECTED, strict=True)):
        for text in expected:
            assert text in output, f"block {index} printed no {text!r}:\n{output}"
    assert "Conflict" not in done.stdout and "Not a person" not in done.stdout
