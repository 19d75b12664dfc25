"""import_memories applies the API's own rules to every line before writing any: one refusal and nothing is
written (exit 1, each refusal as `line N: field: reason`); --partial writes the valid lines; a malformed file
is a clear error, never a traceback."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Membership
from memories.models import Memory

pytestmark = pytest.mark.django_db

GOOD = {
    "body": "Good fact",
    "place": {"channel": "C-general", "kind": "public", "people": ["mona"]},
    "subject_type": "workspace",
}


def run_import(tmp_path, text: str, *extra: str, format: str = "jsonl") -> tuple[str, str, int]:
    """(stdout, stderr, exit status) of one import of `text`."""
    path = tmp_path / "rows.jsonl"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    args = (str(path), "--org", "acme", "--agent", "helper", "--format", format, *extra)
    try:
        call_command("import_memories", *args, stdout=out, stderr=err)
    except CommandError as error:
        return out.getvalue(), err.getvalue() + str(error), error.returncode
    return out.getvalue(), err.getvalue(), 0


REFUSED_LINES = [
    (json.dumps({**GOOD, "created_at": "0001-01-01T00:30:00+01:00"}), "line 2: created_at:"),
    (json.dumps({**GOOD, "created_at": "1900-01-01T00:30:00+01:00"}), "line 3: created_at:"),  # 1899 in UTC
    (json.dumps({**GOOD, "expires_at": "9999-12-31T00:00:00Z"}), "line 4: expires_at:"),
    (json.dumps({**GOOD, "pinned": "no"}), "line 5: pinned: Must be a boolean"),
    (json.dumps({**GOOD, "body": "x" * 2001}), "line 6: body:"),
    (json.dumps({**GOOD, "body": "bell \u0007 here"}), "line 7: body: Contains U+0007"),
    (json.dumps({**GOOD, "subject_type": "user", "subject_id": "mo\u200bna"}), "line 8: subject_id: Contains U+200B"),
    (json.dumps({**GOOD, "colour": "blue"}), "line 9: colour: Unknown field"),
    ("{not json", "line 10: row: not JSON"),
    ("[" * 200_000, "line 11: row: not JSON this service reads: nested too deeply"),
    (json.dumps({**GOOD, "tier": 5}), "line 12: tier: Must be a string"),
]


def test_one_refused_line_writes_nothing_and_every_refusal_is_listed(org, agent, member, tmp_path):
    lines = [json.dumps(GOOD)] + [line for line, _ in REFUSED_LINES] + [json.dumps({**GOOD, "body": "Also good"})]
    out, err, status = run_import(tmp_path, "\n".join(lines))
    assert status == 1
    for _, expected in REFUSED_LINES:
        assert expected in err, expected
    assert "Traceback" not in err
    assert not Memory.objects.exists()


def test_partial_writes_the_valid_lines_and_still_lists_the_refusals(org, agent, member, tmp_path):
    lines = [json.dumps(GOOD), REFUSED_LINES[3][0], json.dumps({**GOOD, "body": "Also good", "pinned": True})]
    out, err, status = run_import(tmp_path, "\n".join(lines), "--partial")
    assert status == 1 and "line 2: pinned: Must be a boolean" in err
    assert "Imported 2 memories" in err and not out  # counts on standard error
    assert dict(Memory.objects.values_list("body", "pinned")) == {"Good fact": False, "Also good": True}


def test_a_refusal_at_write_undoes_the_rows_written_before_it(org, agent, member, tmp_path):
    dm = {"body": "Good fact", "place": {"channel": "D-x", "kind": "dm", "people": ["mona"]}}
    someone_elses = {**dm, "place": {**dm["place"], "people": ["newcomer"]}}
    out, err, status = run_import(tmp_path, "\n".join([json.dumps(dm), json.dumps(someone_elses)]))
    assert status == 1 and "line 2: place" in err and "mona" in err
    assert not Memory.objects.exists()
    # The person the import would have made for the refused line is undone with it.
    assert not Membership.objects.filter(handle="newcomer").exists()


def test_a_valid_file_imports_with_status_zero(org, agent, member, tmp_path):
    row = {**GOOD, "created_at": "1900-01-01T00:30:00+00:00", "expires_at": "2999-12-31T22:00:00-01:00"}
    out, err, status = run_import(tmp_path, json.dumps(row))
    assert status == 0 and "Imported 1 memories" in err
    assert Memory.objects.get().occurred_at.year == 1900


@pytest.mark.parametrize(
    "text, message",
    [
        (json.dumps({"results": 5}), "results here is an integer"),
        ('{"results": ' + "[" * 200_000, "not JSON"),
    ],
)
def test_a_malformed_mem0_file_is_a_clear_error(org, agent, tmp_path, text, message):
    out, err, status = run_import(tmp_path, text, format="mem0")
    assert status == 1 and message in err and "Traceback" not in err
    assert not Memory.objects.exists()


def test_a_file_that_is_not_utf8_is_a_clear_error(org, agent, tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"body": "\xff"}')
    with pytest.raises(CommandError, match="not UTF-8"):
        call_command("import_memories", str(path), "--org", "acme", "--agent", "helper", stderr=io.StringIO())
