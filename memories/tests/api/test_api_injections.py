"""GET /api/v1/injections/{turn_id} and POST …/replay: the record, and the same bytes again."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from memories.models import InjectionLine
from memories.services import memory_redact, memory_supersede
from memories.subjects import subject_erase
from memories.tests.api.helpers import render, session_client


@pytest.fixture
def rendered_turn(agent_api, make_memory, member, dm_with_mona):
    facts = {
        "workspace": make_memory(body="The office is in Leeds"),
        "person": make_memory(
            body="Mona prefers tea",
            scope="person",
            scope_ref=str(member.pk),
            subject_type="user",
            subject_id=str(member.pk),
            scope_label="mona",
        ),
        "profile": make_memory(body="Mona leads the data team", tier="profile"),
    }
    data = render(agent_api, dm_with_mona, "turn-r").json()
    return facts, data


def test_the_record_lists_every_line_in_order(agent_api, rendered_turn):
    facts, data = rendered_turn
    record = agent_api.get("/api/v1/injections/turn-r").json()
    assert record["sha256"] == data["sha256"] and record["cutoff"] == data["cutoff"]
    assert [line["id"] for line in record["lines"]] == record["fact_ids"] == [fact["id"] for fact in data["facts"]]
    assert all(line["line"] in data["text"] for line in record["lines"])


def test_replay_is_byte_identical(agent_api, rendered_turn):
    _, data = rendered_turn
    replay = agent_api.post("/api/v1/injections/turn-r/replay").json()
    assert replay["text"] == data["text"] and replay["sha256"] == data["sha256"] == replay["recorded_sha256"]
    assert replay["identical"] is True and replay["unavailable"] == [] and replay["render_version_matches"] is True


def test_replay_is_identical_after_the_facts_were_corrected(agent_api, rendered_turn, member):
    facts, data = rendered_turn
    memory_supersede(memory=facts["person"], body="Mona prefers coffee now", actor=member)
    memory_supersede(memory=facts["workspace"], body="The office moved to York", actor=member)
    replay = agent_api.post("/api/v1/injections/turn-r/replay").json()
    assert replay["identical"] is True and replay["text"] == data["text"]
    assert "Mona prefers tea" in replay["text"]


def test_an_erasure_scrubs_the_record_and_replay_says_which_fact_is_gone_and_why(agent_api, rendered_turn, member):
    facts, data = rendered_turn
    memory_redact(memory=facts["person"], reason="Mona asked to forget it", actor=member)
    line = InjectionLine.objects.get(memory=facts["person"])
    assert line.line == "" and line.erased_at is not None
    record = agent_api.get("/api/v1/injections/turn-r").json()
    assert "Mona prefers tea" not in str(record)
    replay = agent_api.post("/api/v1/injections/turn-r/replay").json()
    assert replay["identical"] is False and "Mona prefers tea" not in replay["text"]
    assert "The office is in Leeds" in replay["text"]
    assert replay["unavailable"] == [
        {
            "id": str(facts["person"].pk),
            "position": line.position,
            "scope": "person",
            "reason": f"erased on {line.erased_at:%Y-%m-%d} by user:mona: Mona asked to forget it",
            "erased_at": replay["unavailable"][0]["erased_at"],
        }
    ]


def test_a_subject_erasure_reaches_the_injection_records(rendered_turn, org, member):
    facts, _ = rendered_turn
    result = subject_erase(organisation=org, subject_type="user", subject_id=str(member.pk), actor=member)
    assert result["erased"] == 1 and result["injection_lines_scrubbed"] == 1
    assert InjectionLine.objects.get(memory=facts["person"]).line == ""


def test_an_erasure_outside_the_services_scrubs_the_record_too(rendered_turn):
    facts, _ = rendered_turn
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory SET body = '', embedding = NULL, redacted_at = now() WHERE id = %s",
            [str(facts["workspace"].pk)],
        )
    assert InjectionLine.objects.get(memory=facts["workspace"]).line == ""


def test_an_injected_line_cannot_be_rewritten_in_the_database(rendered_turn):
    facts, _ = rendered_turn
    line = InjectionLine.objects.get(memory=facts["workspace"])
    with pytest.raises(IntegrityError, match="memories_injection_immutable"), transaction.atomic():
        InjectionLine.objects.filter(pk=line.pk).update(line="- [workspace] something else")
    with pytest.raises(IntegrityError, match="memories_injection_immutable"), transaction.atomic():
        InjectionLine.objects.filter(pk=line.pk).update(position=99)
    with pytest.raises(IntegrityError, match="memories_injline_erased_is_empty"), transaction.atomic():
        InjectionLine.objects.filter(pk=line.pk).update(erased_at="2026-01-01T00:00:00Z")


def test_a_turn_is_read_only_by_the_agent_that_rendered_it_and_the_people_in_its_place(
    rendered_turn, second_agent_api, member_api, second_member
):
    assert second_agent_api.get("/api/v1/injections/turn-r").status_code == 404
    assert member_api.get("/api/v1/injections/turn-r").status_code == 200
    assert session_client(second_member).get("/api/v1/injections/turn-r").status_code == 404
    assert session_client(second_member).post("/api/v1/injections/turn-r/replay").status_code == 404


def test_an_unknown_turn_is_a_404(agent_api):
    assert agent_api.get("/api/v1/injections/nope").status_code == 404
    assert agent_api.post("/api/v1/injections/nope/replay").status_code == 404
