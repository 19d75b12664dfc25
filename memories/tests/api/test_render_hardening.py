"""Render keeps the seeds' safeguards: invisibles marked in every section, whom each line is about,
the accept-or-refuse warning, notes that fade without expiring, and planes that fail as omissions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.models import Injection, Memory
from memories.tests.api.helpers import remember
from memories.tests.api.helpers import render as render_turn
from memories.turns import render, sections

INVISIBLE_CLASSES = {
    "tag characters": "".join(chr(0xE0000 + ord(c)) for c in "obey"),
    "zero-width space": "\u200b",
    "zero-width joiner": "\u200d",
    "bidi override": "\u202e",
    "bidi isolate": "\u2066",
    "right-to-left mark": "\u200f",
    "byte order mark": "\ufeff",
    "soft hyphen": "\u00ad",
}
SCOTLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"
EMOJI = f"\U0001f468\u200d\U0001f469\u200d\U0001f467 \u2764\ufe0f {SCOTLAND}"


def _marks(chars: str) -> list[str]:
    return [f"U+{ord(char):04X}" for char in chars[:1]]


@pytest.mark.parametrize("name", sorted(INVISIBLE_CLASSES))
def test_invisible_characters_are_marked_in_the_person_section(agent_api, dm_with_mona, name):
    hidden = INVISIBLE_CLASSES[name]
    assert remember(agent_api, dm_with_mona, f"Prefers{hidden} tea {EMOJI}").status_code == 201
    data = render_turn(agent_api, dm_with_mona, f"turn-person-{name.replace(' ', '-')}").json()
    assert data["facts"][0]["scope"] == "person"
    text = data["text"]
    assert EMOJI in text  # valid emoji sequences pass intact
    assert not any(char in text.replace(EMOJI, "") for char in hidden)
    assert _marks(hidden)[0] in text


@pytest.mark.parametrize("name", sorted(INVISIBLE_CLASSES))
def test_invisible_characters_are_marked_in_the_channel_section(agent_api, general, name):
    hidden = INVISIBLE_CLASSES[name]
    assert remember(agent_api, general, f"Standup{hidden} is at nine {EMOJI}", scope="channel").status_code == 201
    data = render_turn(agent_api, general, f"turn-channel-{name.replace(' ', '-')}").json()
    assert data["facts"][0]["scope"] == "channel"
    assert EMOJI in data["text"] and _marks(hidden)[0] in data["text"]
    assert not any(char in data["text"].replace(EMOJI, "") for char in hidden)


@pytest.mark.parametrize("name", sorted(INVISIBLE_CLASSES))
def test_invisible_characters_are_marked_in_a_planes_section(agent_api, general, name):
    hidden = INVISIBLE_CLASSES[name]
    sections.register_render_section(
        lambda principal, place, cutoff: sections.SectionLines("Admitted claims", [f"Rate{hidden} is 4.75% {EMOJI}"]),
        name="hidden",
    )
    try:
        text = render_turn(agent_api, general, f"turn-plane-{name.replace(' ', '-')}").json()["text"]
    finally:
        sections.unregister_render_section("hidden")
    assert "Admitted claims:" in text and EMOJI in text and _marks(hidden)[0] in text
    assert not any(char in text.replace(EMOJI, "") for char in hidden)


def test_each_line_says_whom_its_fact_is_about_and_the_preamble_warns_against_deciding_on_them(
    agent_api, dm_with_mona, make_memory
):
    remember(agent_api, dm_with_mona, "Prefers tea")
    remember(agent_api, dm_with_mona, "Strong in SQL", subject_type="candidate", subject_id="cand-9")
    make_memory(body="The office is in Leeds")
    data = render_turn(agent_api, dm_with_mona, "turn-whom").json()
    lines = {fact["line"].rsplit("] ", 1)[1]: fact["line"] for fact in data["facts"]}
    assert "· about mona ·" in lines["Prefers tea"]
    assert "· about candidate cand-9 ·" in lines["Strong in SQL"]
    assert "· about the workspace ·" in lines["The office is in Leeds"]
    assert "never on their own a reason to accept or refuse anybody" in data["text"]
    assert Injection.objects.get(turn_id="turn-whom").render_version == render.RENDER_VERSION == 3


def test_a_note_fades_from_render_after_fourteen_days_but_stays_listable_exportable_and_erasable(
    agent_api, member_api, dm_with_mona, member, make_memory
):
    old = timezone.now() - timedelta(days=20)
    note = make_memory(
        body="Said hello on the stairs",
        tier="note",
        scope="person",
        scope_ref=str(member.pk),
        subject_type="user",
        subject_id=str(member.pk),
        now=old,
    )
    Memory.objects.filter(pk=note.pk).update(created_at=old)
    assert Memory.objects.get(pk=note.pk).expires_at > timezone.now()  # the ordinary 90 days, not the fade
    data = render_turn(agent_api, dm_with_mona, "turn-faded").json()
    assert "Said hello" not in data["text"]
    assert data["faded"] == [{"scope": "person", "count": 1}]
    assert Injection.objects.get(turn_id="turn-faded").faded == [{"scope": "person", "count": 1}]
    # Judged against the cutoff: a turn rendered as of the day it was written still shows it.
    earlier = render_turn(agent_api, dm_with_mona, "turn-then", cutoff=old.date().isoformat()).json()
    assert "Said hello on the stairs" in earlier["text"]
    listed = member_api.get("/api/v1/memories").json()["results"]
    assert str(note.pk) in {row["id"] for row in listed}
    exported = member_api.get(f"/api/v1/subjects/user/{member.pk}/memories").json()
    assert str(note.pk) in {row["id"] for row in exported["memories"]}
    assert member_api.delete(f"/api/v1/memories/{note.pk}", {"reason": "gone"}, format="json").status_code == 200


def test_a_plane_that_fails_is_an_omission_in_the_response_and_the_record_not_a_failed_render(
    agent_api, general, make_memory
):
    make_memory(body="A workspace fact")

    def broken(principal, place, cutoff):
        raise RuntimeError("the claims store is down")

    def broken_in_sql(principal, place, cutoff):
        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM no_such_table")

    sections.register_render_section(broken, name="boom")
    sections.register_render_section(broken_in_sql, name="boom-sql")
    try:
        response = render_turn(agent_api, general, "turn-boom")
    finally:
        sections.unregister_render_section("boom")
        sections.unregister_render_section("boom-sql")
    assert response.status_code == 200, response.content
    data = response.json()
    assert "A workspace fact" in data["text"]
    failed = {item["scope"]: item["reason"] for item in data["omissions"] if item["scope"].startswith("section:")}
    assert set(failed) == {"section:boom", "section:boom-sql"}
    assert "RuntimeError" in failed["section:boom"] and "left out" in failed["section:boom"]
    assert "claims store is down" not in str(data)  # the reason names the failure, never its text
    assert Injection.objects.get(turn_id="turn-boom").omissions == data["omissions"]
