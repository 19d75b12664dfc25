"""A person's erasure empties what still names or quotes them: the source ref, label and run id of every row
of theirs (rows erased before included), the label of their person scope, their display name, and the
question of every turn in a DM with them however the DM was first named. Ids, handles, usernames, author and
source kinds and times stay."""

from __future__ import annotations

import json
from datetime import date

import pytest
from django.db import connection, transaction

from accounts.models import Membership
from memories.models import Injection, Memory
from memories.tests.api.helpers import remember, render

pytestmark = pytest.mark.django_db

PROVENANCE = {"source_ref": "msg-4471", "source_label": "Told by Mona Lisa", "run_id": "run-mona-9"}


def erase(owner_api, person):
    response = owner_api.post(f"/api/v1/subjects/user/{person.pk}/erase", {"reason": "Request 12"}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_receipts_and_lists_keep_no_source_text_and_no_label_naming_them(
    owner_api, member_api, agent_api, member, dm_with_mona, private_team
):
    in_her_dm = remember(agent_api, dm_with_mona, "Her locker is 12", **PROVENANCE).json()
    in_the_team = remember(agent_api, private_team, "Mona runs the Monday release", only_for="mona", **PROVENANCE)
    in_the_team = in_the_team.json()
    erased_before = remember(agent_api, dm_with_mona, "Her old locker was 7", **PROVENANCE).json()
    # Erased the way erasure worked before it emptied provenance: the body went, the source text stayed.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory SET body = '', embedding = NULL, redacted_at = now(), redaction_reason = 'old'"
            " WHERE id = %s",
            [erased_before["id"]],
        )
    before = member_api.get(f"/api/v1/subjects/user/{member.pk}/memories").json()["memories"]
    assert {row["source"]["label"] for row in before} == {"Told by Mona Lisa"}  # positive control
    assert {row["scope_label"] for row in before} == {"mona"}

    answer = erase(owner_api, member)

    assert answer["stores"]["provenance"] == 3
    assert [text for text in ("msg-4471", "Mona Lisa", "run-mona-9", '"mona"') if text in json.dumps(answer)] == []
    after = {row["id"]: row for row in member_api.get(f"/api/v1/subjects/user/{member.pk}/memories").json()["memories"]}
    assert set(after) == {in_her_dm["id"], in_the_team["id"], erased_before["id"]}
    for row in after.values():
        assert row["source"] == {"kind": row["source"]["kind"], "ref": "", "label": "", "run_id": ""}
        assert row["source"]["kind"] and row["created_at"] and row["receipt"]["erased_at"]
        assert row["scope_label"] == ""  # each was in her person scope: the label was her name
        assert row["scope"] == "person" and row["subject_id"] == str(member.pk)
    gone = agent_api.get(f"/api/v1/memories/{in_her_dm['id']}", {"place": dm_with_mona["channel"]})
    assert gone.status_code == 410 and "Mona Lisa" not in gone.content.decode()


def test_a_channel_label_stays_it_names_the_place_not_them(owner_api, agent_api, member, private_team):
    about_her = remember(agent_api, private_team, "Mona leads data", subject_type="user", subject_id="mona").json()
    erase(owner_api, member)
    row = Memory.objects.get(pk=about_her["id"])
    assert (row.scope, row.scope_label, row.body) == ("channel", "G-team", "")


def test_their_display_name_goes_and_their_id_handle_and_username_stay(owner_api, org, member):
    Membership.objects.filter(user=member).update(handle="U-mona", display_name="Mona Lisa")
    member.first_name, member.last_name = "Mona", "Lisa"
    member.save(update_fields=["first_name", "last_name"])

    answer = erase(owner_api, member)

    membership = Membership.objects.select_related("user").get(user=member)
    assert (membership.display_name, membership.user.first_name, membership.user.last_name) == ("", "", "")
    assert (membership.handle, membership.user.username, membership.organisation_id) == ("U-mona", "mona", org.pk)
    assert answer["stores"]["names"] == 2


def test_a_question_in_a_dm_with_them_is_emptied_however_the_dm_was_first_named(
    owner_api, agent_api, org, member, second_member
):
    # A DM an agent names for the first time in the turn that asks, before anything about her is held.
    first_named_by_the_agent = {"channel": "D-mona-new", "kind": "dm", "people": ["mona"]}
    assert render(agent_api, first_named_by_the_agent, "turn-1", question="Where is my locker?").status_code == 200
    with_max = {"channel": "D-max", "kind": "dm", "people": ["max"]}
    assert render(agent_api, with_max, "turn-max", question="Where is Max's locker?").status_code == 200
    # A turn recorded in that channel without her among its people (as an older render stored it): the
    # channel's record is a DM with her, so its question is hers too.
    Injection.objects.create(
        organisation=org,
        turn_id="turn-old",
        place_channel="D-mona-new",
        place_kind="dm",
        place_people=[],
        question="What did I say yesterday?",
        cutoff=date(2026, 12, 1),
        text_sha256="0" * 64,
        render_version=1,
    )

    answer = erase(owner_api, member)

    questions = dict(Injection.objects.values_list("turn_id", "question"))
    assert questions == {"turn-1": "", "turn-old": "", "turn-max": "Where is Max's locker?"}
    assert answer["stores"]["injection_questions"] == 2
