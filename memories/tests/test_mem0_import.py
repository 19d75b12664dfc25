"""import_memories --format mem0 on a real mem0 2.x export (`get_all`): each user_id's memories land in that
person's scope (a directory person is created for a handle nobody has), never in a shared place; rows without
a user_id reach a shared place only with --shared, which is refused for rows with one, by the file's line."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Membership
from memories.models import Memory, Scope, SubjectType
from memories.subjects import subject_erase

pytestmark = pytest.mark.django_db


def mem0_memory(number: int, memory: str, **ids) -> dict:
    """One memory as mem0 2.x's `Memory.get_all` answers it (times in mem0's US/Pacific, metadata and hash kept)."""
    return {
        "id": f"5b0a7c1e-0d2f-4f3a-9a6e-{number:012d}",
        "memory": memory,
        "hash": f"{number:032x}",
        "metadata": {"category": "health"} if number % 2 else None,
        "created_at": f"2026-09-{number:02d}T10:21:33.123456-07:00",
        "updated_at": f"2026-10-{number:02d}T08:00:00.654321-07:00" if number == 2 else None,
        **ids,
    }


EXPORT = {
    "results": [
        mem0_memory(1, "Is allergic to penicillin", user_id="mona", agent_id="support-bot", run_id="run-1"),
        mem0_memory(2, "Prefers window seats", user_id="alice", agent_id="support-bot"),
        mem0_memory(3, "Has a dog called Rex", user_id="bob"),
        mem0_memory(4, "Works nights on Tuesdays", user_id="alice", run_id="run-7"),
    ]
}


def run_import(tmp_path, document: dict, *extra: str) -> tuple[str, str, int]:
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(document, indent=2))  # mem0 users save get_all pretty-printed
    out, err = io.StringIO(), io.StringIO()
    args = (str(path), "--org", "acme", "--agent", "helper", "--format", "mem0", *extra)
    try:
        call_command("import_memories", *args, stdout=out, stderr=err)
    except CommandError as error:
        return out.getvalue(), err.getvalue() + str(error), error.returncode
    return out.getvalue(), err.getvalue(), 0


def test_three_users_import_into_their_own_scopes_and_nothing_reaches_the_public_channel(org, agent, member, tmp_path):
    out, err, status = run_import(tmp_path, EXPORT, "--place", "C-general:public")
    assert status == 0, err
    people = {
        m.handle or m.user.username: m for m in Membership.objects.select_related("user").filter(organisation=org)
    }
    assert people["alice"].directory and people["bob"].directory  # created for the handles nobody had
    rows = {row.body: row for row in Memory.objects.filter(organisation=org)}
    expected_owner = {
        "Is allergic to penicillin": member.pk,
        "Prefers window seats": people["alice"].user_id,
        "Has a dog called Rex": people["bob"].user_id,
        "Works nights on Tuesdays": people["alice"].user_id,
    }
    for body, owner in expected_owner.items():
        row = rows[body]
        assert (row.scope, row.scope_ref) == (Scope.PERSON, str(owner)), body
        assert (row.subject_type, row.subject_id) == (SubjectType.USER, str(owner)), body
    assert not Memory.objects.filter(organisation=org).exclude(scope=Scope.PERSON).exists()
    penicillin = rows["Is allergic to penicillin"]
    assert penicillin.source_ref == "mem0:5b0a7c1e-0d2f-4f3a-9a6e-000000000001"
    assert (penicillin.source_label, penicillin.source_run_id) == ("mem0 import, agent support-bot", "run-1")
    assert rows["Prefers window seats"].occurred_at.isoformat() == "2026-10-02T15:00:00.654321+00:00"  # updated_at
    assert "Imported 4 memories" in err and not out  # counts on standard error, which leaves standard output for data
    assert "  person alice: 2" in err and "  person bob: 1" in err and "  person mona: 1" in err
    assert "Made 2 directory people this organisation lacked: alice, bob." in err
    # The person's erasure finds what was imported about them.
    subject_erase(organisation=org, subject_type="user", subject_id=str(people["alice"].user_id), agent=agent)
    assert set(Memory.objects.filter(scope_ref=str(people["alice"].user_id)).values_list("body", flat=True)) == {""}


def test_shared_is_refused_for_rows_with_a_user_id_by_their_line_and_nothing_is_written(org, agent, member, tmp_path):
    document = {"results": [mem0_memory(5, "The office is closed on Fridays"), *EXPORT["results"][:2]]}
    out, err, status = run_import(tmp_path, document, "--place", "C-general:public", "--shared")
    assert status == 1
    # Pretty-printed, a memory spans several lines: a refusal names the line its object opens on.
    lines = (tmp_path / "mem0.json").read_text().splitlines()
    # The object opens on the line before its id: line i in counting from 1, for the id at index i.
    opens = {
        item["user_id"]: next(i for i, line in enumerate(lines) if f'"id": "{item["id"]}"' in line)
        for item in EXPORT["results"][:2]
    }
    assert f"line {opens['mona']}: user_id: 'mona' names a person" in err, err
    assert f"line {opens['alice']}: user_id: 'alice' names a person" in err and "line 3:" not in err, err
    assert "nothing was written" in err
    assert not Memory.objects.filter(organisation=org).exists()
    assert not Membership.objects.filter(organisation=org, handle="alice").exists()


def test_a_row_without_a_user_id_needs_shared_to_reach_a_shared_place(org, agent, member, tmp_path):
    document = {"results": [mem0_memory(5, "The office is closed on Fridays")]}
    out, err, status = run_import(tmp_path, document, "--place", "C-general:public")
    assert status == 1 and "line 3: user_id: names no user_id" in err and "--shared" in err
    out, err, status = run_import(tmp_path, document, "--place", "C-general:public", "--shared")
    assert status == 0, err
    row = Memory.objects.get(organisation=org)
    assert (row.scope, row.scope_ref, row.subject_type) == (Scope.CHANNEL, "C-general", SubjectType.WORKSPACE)
    assert "  channel C-general: 1" in err


def test_a_user_id_that_cannot_be_a_handle_is_refused_by_its_line(org, agent, tmp_path):
    lines = "\n".join(
        json.dumps(mem0_memory(n, f"Fact {n}", user_id=user)) for n, user in ((1, "ok-user"), (2, "bad user"))
    )
    path = tmp_path / "mem0.jsonl"
    path.write_text(lines)
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_memories", str(path), "--org", "acme", "--agent", "helper", "--format", "mem0", stderr=err)
    assert "line 2: user_id: names nobody here" in err.getvalue()
    assert not Memory.objects.filter(organisation=org).exists()
