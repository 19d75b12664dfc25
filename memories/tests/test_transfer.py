"""export_memories and import_memories: a round trip keeps bodies, places, scopes, subjects and chains;
rows count toward the cap (the refusals themselves: test_import_checks_every_line)."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from accounts.services import agent_create
from memories.models import Memory, SourceKind
from memories.places import place_for_turn
from memories.services import memory_redact, memory_supersede
from memories.turns.writes import RememberRequest, memory_remember_in_place

pytestmark = pytest.mark.django_db


def said(org, agent, place, body, **extra):
    resolved = place_for_turn(
        organisation=org, channel=place["channel"], kind=place["kind"], people=place["people"], agent=agent
    )
    return memory_remember_in_place(
        RememberRequest(body=body, **extra), organisation=org, resolved=resolved, writer=agent
    )[0]


@pytest.fixture
def seeded(org, member, second_member, agent):
    dm = {"channel": "D-mona", "kind": "dm", "people": ["mona"]}
    team = {"channel": "G-team", "kind": "private", "people": ["mona", "max"]}
    general = {"channel": "C-general", "kind": "public", "people": ["mona"]}
    old = timezone.now() - timedelta(days=10)
    rows = {
        "person": said(org, agent, dm, "Prefers to be called Mo", tier="profile", occurred_at=old),
        "channel": said(org, agent, team, "Standup is at 9", source_ref="msg-9", subject_type="workspace"),
        "workspace": said(
            org, agent, general, "The office is closed on Fridays", scope="workspace", subject_type="workspace"
        ),
        "candidate": said(org, agent, team, "Candidate speaks Dutch", subject_type="candidate", subject_id="cand-1"),
        "erased": said(org, agent, team, "A secret to forget", subject_type="workspace"),
    }
    rows["corrected"] = memory_supersede(memory=rows["channel"], body="Standup is at 10", agent=agent)
    memory_redact(memory=rows["erased"], reason="asked", agent=agent)
    return rows


def export(org) -> list[dict]:
    out = io.StringIO()
    call_command("export_memories", "--org", org.slug, stdout=out, stderr=io.StringIO())
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_export_writes_one_remember_request_per_live_memory_with_chains_and_no_receipts(org, seeded):
    header, *rows = export(org)
    assert header["archivist_export"] == 2 and header["organisation"] == "acme"
    bodies = [row["body"] for row in rows]
    assert "A secret to forget" not in bodies and "" not in bodies  # erased rows and receipts left out
    by_body = {row["body"]: row for row in rows}
    assert by_body["Standup is at 10"]["supersedes"] == str(seeded["channel"].pk)
    assert by_body["Prefers to be called Mo"]["place"] == {"channel": "D-mona", "kind": "dm", "people": ["mona"]}
    assert by_body["Prefers to be called Mo"]["subject_id"] == "mona"  # a person by name, not by account id
    assert by_body["Standup is at 9"]["place"]["people"] == ["max", "mona"]
    assert by_body["The office is closed on Fridays"]["scope"] == "workspace"


def test_an_export_imports_back_with_the_same_shapes_dates_and_chain(org, seeded, tmp_path):
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in export(org)))
    agent_create(organisation=org, name="importer")
    out, err = io.StringIO(), io.StringIO()
    call_command("import_memories", str(path), "--org", "acme", "--agent", "importer", stdout=out, stderr=err)
    assert "Imported 5 memories (1 as corrections of earlier rows); 0 refused." in err.getvalue()
    imported = {row.body: row for row in Memory.objects.filter(agent__name="importer")}
    for key in ("person", "workspace", "candidate"):
        original = seeded[key]
        copy = imported[original.body]
        assert (copy.scope, copy.scope_ref, copy.subject_type, copy.subject_id, copy.tier) == (
            original.scope,
            original.scope_ref,
            original.subject_type,
            original.subject_id,
            original.tier,
        )
        assert copy.source_kind == SourceKind.IMPORT and copy.expires_at > timezone.now()
    # Dates are kept: what happened when, else when it was first written.
    assert imported["Prefers to be called Mo"].occurred_at == seeded["person"].occurred_at
    assert imported["The office is closed on Fridays"].occurred_at == seeded["workspace"].created_at
    assert imported["Standup is at 9"].superseded_by_id == imported["Standup is at 10"].pk


def test_imported_rows_count_toward_the_agents_cap(org, agent, tmp_path, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 2
    place = {"channel": "C-general", "kind": "public", "people": []}
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "\n".join(json.dumps({"body": f"Fact {n}", "place": place, "subject_type": "workspace"}) for n in range(3))
    )
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 rows refused"):
        call_command(
            "import_memories", str(path), "--org", "acme", "--agent", "helper", "--format", "jsonl", stderr=err
        )
    assert Memory.objects.filter(agent=agent).count() == 0  # refused at its write: nothing is written
    assert "line 3: row: This agent holds 2 live facts" in err.getvalue()
    with pytest.raises(CommandError):
        call_command(
            "import_memories",
            *(str(path), "--org", "acme", "--agent", "helper", "--format", "jsonl", "--partial"),
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    assert Memory.objects.filter(agent=agent).count() == 2


def test_unknown_organisation_or_agent_is_a_command_error(org, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(CommandError, match="No organisation"):
        call_command("import_memories", str(path), "--org", "nope", "--agent", "helper")
    with pytest.raises(CommandError, match="No agent named"):
        call_command("import_memories", str(path), "--org", "acme", "--agent", "nobody")


def copy_with_source_kind(row, kind: str) -> None:
    """A raw insert that skips every service: the row copied with another id and source kind."""
    from django.db.models import GeneratedField

    columns = [f.column for f in Memory._meta.concrete_fields if not isinstance(f, GeneratedField) and f.column != "id"]
    chosen = ", ".join(f"%s AS {c}" if c == "source_kind" else c for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO memories_memory (id, {', '.join(columns)}) "
            f"SELECT gen_random_uuid(), {chosen} FROM memories_memory WHERE id = %s",
            [kind, row.pk],
        )


def test_the_database_takes_the_import_source_kind_and_refuses_an_unknown_one(org, agent, make_memory):
    row = make_memory(source_kind=SourceKind.IMPORT)
    assert row.source_kind == "import"
    copy_with_source_kind(row, "import")  # the positive control: the same raw insert passes with a known kind
    with pytest.raises(IntegrityError, match="memories_enums_valid"), transaction.atomic():
        copy_with_source_kind(row, "bogus")


def test_an_export_imports_into_another_organisation_keeping_every_row_and_making_its_people(
    org, other_org, seeded, agent, tmp_path
):
    from accounts.models import Membership
    from accounts.people import person_upsert

    person_upsert(organisation=org, handle="U024", display_name="Ursula", agent=agent)
    dm = {"channel": "D-ursula", "kind": "dm", "people": ["U024"]}
    said(org, agent, dm, "Ursula takes her tea black", tier="profile")
    said(
        org,
        agent,
        {"channel": "G-trio", "kind": "private", "people": ["U024", "mona", "max"]},
        "Trio meets Monday",
        subject_type="user",
        subject_id="U024",
    )
    path = tmp_path / "export.jsonl"
    rows = export(org)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert rows[0]["people"]["U024"] == "Ursula"
    agent_create(organisation=other_org, name="importer")
    out, err = io.StringIO(), io.StringIO()
    call_command("import_memories", str(path), "--org", "globex", "--agent", "importer", stdout=out, stderr=err)
    assert not out.getvalue()  # counts and people on standard error
    assert f"Imported {len(rows) - 1} memories" in err.getvalue() and "0 refused" in err.getvalue()
    assert "Made 3 directory people this organisation lacked: " in err.getvalue()
    made = dict(Membership.objects.filter(organisation=other_org, directory=True).values_list("handle", "display_name"))
    assert made == {"U024": "Ursula", "mona": "", "max": ""}
    assert sorted(
        Memory.objects.filter(organisation=other_org)
        .exclude(superseded_by__isnull=False)
        .values_list("body", flat=True)
    ) == sorted(
        row["body"]
        for row in rows[1:]
        if row["body"] not in {r["body"] for r in rows[1:] if any(o.get("supersedes") == r["ref"] for o in rows[1:])}
    )
    tea = Memory.objects.get(organisation=other_org, body="Ursula takes her tea black")
    ursula = Membership.objects.get(organisation=other_org, handle="U024")
    assert (tea.scope, tea.scope_ref) == ("person", str(ursula.user_id))
    trio = Memory.objects.get(organisation=other_org, body="Trio meets Monday")
    assert trio.subject_id == str(ursula.user_id)


def test_a_version_1_export_still_imports(org, member, agent, tmp_path):
    header = {"archivist_export": 1, "organisation": "elsewhere", "exported_at": "2026-11-01T00:00:00+00:00"}
    row = {
        "body": "Prefers to be called Mo",
        "place": {"channel": "D-mona", "kind": "dm", "people": ["mona"]},
        "scope": "person",
        "subject_type": "user",
        "subject_id": "mona",
        "tier": "profile",
        "pinned": False,
    }
    path = tmp_path / "v1.jsonl"
    arguments = (str(path), "--org", "acme", "--agent", "helper")
    path.write_text(json.dumps(header) + "\n" + json.dumps(row) + "\n")
    err = io.StringIO()
    call_command("import_memories", *arguments, stdout=io.StringIO(), stderr=err)
    assert "Imported 1 memories" in err.getvalue()
    assert Memory.objects.get(body="Prefers to be called Mo").scope_ref == str(member.pk)
    path.write_text(json.dumps({**header, "archivist_export": 3}) + "\n" + json.dumps(row) + "\n")
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_memories", *arguments, stdout=io.StringIO(), stderr=err)
    assert "line 1: archivist_export: export format version 3 is not one this server reads" in err.getvalue()
