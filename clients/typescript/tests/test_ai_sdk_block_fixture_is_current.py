"""The AI SDK package's text rules are tested against a fixture the Python client's rules wrote; this fails when
those rules change and the fixture was not written again, so the TypeScript port cannot fall behind unseen."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "packages" / "ai-sdk" / "scripts" / "make_block_fixture.py"


def _script():
    spec = importlib.util.spec_from_file_location("make_block_fixture", SCRIPT)
    assert spec and spec.loader, f"{SCRIPT} is missing"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_fixture_is_what_the_python_rules_make_now():
    script = _script()
    assert script.OUT.read_text() == script.fixture_text(), f"stale: run {SCRIPT} to write it again"


def test_the_check_fails_on_a_fixture_that_differs(tmp_path, monkeypatch, capsys):
    script = _script()
    stale = tmp_path / "blocks.json"
    stale.write_text(script.OUT.read_text().replace("Prefers to be called Mo", "Prefers to be called Max", 1))
    monkeypatch.setattr(script, "OUT", stale)
    monkeypatch.setattr("sys.argv", ["make_block_fixture.py", "--check"])
    assert script.main() == 1
    assert "stale" in capsys.readouterr().out
