"""Nobody acts in a place they are not in: the place's record decides, through every endpoint that takes one.

A signed-in person may use their own DM, a private channel whose record lists
them, and the public channels of their organisation; anything else answers 404
with nothing recalled, rendered or written. Each refusal has a positive control:
the same call from someone the record lets in succeeds.
"""

from __future__ import annotations

import pytest

from memories.models import Channel, ChannelMember, Injection, Memory, PlaceAudit
from memories.tests.api.conftest import recorded
from memories.tests.api.helpers import recall, remember, render, session_client


@pytest.fixture
def max_dm(org, second_member):
    return recorded(org, {"channel": "D-max", "kind": "dm", "people": [second_member.username]})


@pytest.fixture
def max_only(org, second_member):
    return recorded(org, {"channel": "G-max", "kind": "private", "people": [second_member.username]})


@pytest.fixture
def max_api(second_member):
    return session_client(second_member)


def membership(org, channel: str) -> set:
    return set(
        ChannelMember.objects.filter(organisation=org, channel__external_id=channel).values_list("user_id", flat=True)
    )


@pytest.mark.parametrize("place_name", ["max_dm", "max_only"])
def test_a_person_cannot_recall_render_or_remember_in_a_place_they_are_not_in(
    request, org, member_api, max_api, agent_api, place_name
):
    place = request.getfixturevalue(place_name)
    # The call names the caller as the place's person: a claim the record does not back.
    claimed = {**place, "people": ["mona"]}
    fact = remember(agent_api, place, "The launch code is tulip", subject_type="workspace")
    assert fact.status_code == 201, fact.content
    members_before = membership(org, place["channel"])

    assert recall(member_api, claimed, "launch code").status_code == 404
    assert render(member_api, claimed, "turn-mona-sneaks", question="launch code").status_code == 404
    written = remember(member_api, claimed, "I was here", subject_type="workspace")
    assert written.status_code == 404
    assert written.json()["error"] == "not_found"
    assert not Memory.objects.filter(body="I was here").exists()
    assert not Injection.objects.filter(turn_id="turn-mona-sneaks").exists()
    assert membership(org, place["channel"]) == members_before

    # Positive control: the person the record names recalls the fact there.
    found = recall(max_api, place, "launch code")
    assert found.status_code == 200, found.content
    assert [row["body"] for row in found.json()["results"]] == ["The launch code is tulip"]


def test_a_person_cannot_name_a_place_that_has_no_record(member_api, org):
    place = {"channel": "D-new", "kind": "dm", "people": ["mona"]}
    assert recall(member_api, place, "anything").status_code == 404
    assert remember(member_api, place, "Hello").status_code == 404
    assert not Channel.objects.filter(organisation=org, external_id="D-new").exists()


def test_a_person_may_use_a_public_channel_they_are_not_listed_in(member_api, agent_api, general):
    remember(agent_api, general, "Lunch is at noon")
    response = recall(member_api, general, "lunch")
    assert response.status_code == 200
    assert [row["body"] for row in response.json()["results"]] == ["Lunch is at noon"]


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("post", "/api/v1/memories/{id}/supersede", {"body": "Changed by mona"}),
        ("post", "/api/v1/memories/{id}/pin", {}),
        ("delete", "/api/v1/memories/{id}", {}),
        ("get", "/api/v1/memories/{id}", None),
    ],
)
def test_a_person_cannot_see_or_change_a_fact_of_a_place_they_are_not_in(
    member_api, max_api, agent_api, max_only, method, path, body
):
    fact = remember(agent_api, max_only, "Max's team ships on Friday", subject_type="workspace").json()
    url = path.format(id=fact["id"])
    if body is not None:
        body = {**body, "place": {**max_only, "people": ["mona"]}}
    response = getattr(member_api, method)(url, body, format="json")
    assert response.status_code == 404, response.content
    assert Memory.objects.get(pk=fact["id"]).redacted_at is None
    assert not Memory.objects.filter(body="Changed by mona").exists()
    # Positive control: a member of the channel sees it.
    assert max_api.get(f"/api/v1/memories/{fact['id']}").status_code == 200


def test_the_memory_list_shows_a_person_exactly_what_the_records_let_them_see(
    member_api, max_api, agent_api, max_only, general
):
    remember(agent_api, max_only, "Only for max's team", subject_type="workspace")
    remember(agent_api, general, "For everyone in general")
    mine = {row["body"] for row in member_api.get("/api/v1/memories").json()["results"]}
    theirs = {row["body"] for row in max_api.get("/api/v1/memories").json()["results"]}
    assert mine == {"For everyone in general"}
    assert theirs == {"Only for max's team", "For everyone in general"}


def test_injections_and_replays_are_shown_only_to_the_people_the_record_had_there(
    member_api, max_api, agent_api, max_only
):
    remember(agent_api, max_only, "Team fact about ships", subject_type="workspace")
    assert render(agent_api, max_only, "turn-team", question="ships").status_code == 200
    for path in ("/api/v1/injections/turn-team", "/api/v1/injections/turn-team/replay"):
        call = member_api.get if path.endswith("team") else member_api.post
        assert call(path).status_code == 404
    assert max_api.get("/api/v1/injections/turn-team").status_code == 200


def test_turn_calls_leave_membership_unchanged(org, agent_api, member_api, private_team, general, dm_with_mona):
    before = {name: membership(org, name) for name in ("G-team", "C-general", "D-mona")}
    audits = PlaceAudit.objects.count()
    for place in (
        {**private_team, "people": ["mona"]},
        {**private_team, "kind": "public"},
        {**general, "people": ["mona", "max"]},
    ):
        assert recall(agent_api, place, "x").status_code == 200
        assert render(agent_api, place, f"turn-{len(str(place))}-{place['kind']}").status_code == 200
        assert remember(agent_api, place, "A note", subject_type="workspace").status_code == 201
    assert recall(member_api, dm_with_mona, "x").status_code == 200
    assert {name: membership(org, name) for name in before} == before
    assert Channel.objects.get(organisation=org, external_id="G-team").kind == "private"
    assert PlaceAudit.objects.count() == audits


def test_a_dm_is_bound_to_its_one_person(agent_api, member_api, max_api, dm_with_mona):
    other = {**dm_with_mona, "people": ["max"]}
    refused = recall(agent_api, other, "x")
    assert refused.status_code == 409
    assert "mona" in refused.json()["detail"]  # agents are told whom the DM is with
    # A person is told nothing: the DM is simply not theirs.
    assert recall(max_api, other, "x").status_code == 404
    assert recall(max_api, dm_with_mona, "x").status_code == 404
    assert recall(member_api, dm_with_mona, "x").status_code == 200


def test_a_place_seen_first_is_created_only_by_an_agent_with_the_directory_right(
    org, agent_with_token, agent_api, member
):
    from accounts.models import AgentToken

    place = {"channel": "G-new", "kind": "private", "people": ["mona"]}
    AgentToken.objects.filter(agent=agent_with_token[0]).update(directory=False)
    assert recall(agent_api, place, "x").status_code == 404
    assert not Channel.objects.filter(organisation=org, external_id="G-new").exists()
    AgentToken.objects.filter(agent=agent_with_token[0]).update(directory=True)
    assert recall(agent_api, place, "x").status_code == 200
    assert membership(org, "G-new") == {member.pk}
    audit = PlaceAudit.objects.get(channel__external_id="G-new")
    assert (audit.agent_id, audit.kind_to, audit.added) == (agent_with_token[0].pk, "private", [str(member.pk)])


def test_only_for_from_a_person_names_only_themself(member_api, member, second_member, private_team):
    refused = remember(member_api, private_team, "Max is allergic to nuts", only_for="max")
    assert refused.status_code == 400
    assert "only_for" in refused.json()["fields"]
    assert not Memory.objects.filter(body="Max is allergic to nuts").exists()
    kept = remember(member_api, private_team, "I am allergic to nuts", only_for="mona")
    assert kept.status_code == 201
    assert (kept.json()["scope"], kept.json()["scope_ref"]) == ("person", str(member.pk))


def test_only_for_from_an_agent_names_a_person_of_the_place(org, agent_api, owner, second_member, private_team):
    refused = remember(agent_api, private_team, "Olive likes jazz", only_for="olive")
    assert refused.status_code == 400
    assert "only_for" in refused.json()["fields"]
    kept = remember(agent_api, private_team, "Max likes jazz", only_for="max")
    assert kept.status_code == 201
    assert kept.json()["scope_ref"] == str(second_member.pk)


def test_a_member_cannot_write_a_workspace_fact(member_api, owner_api, general):
    narrowed = remember(member_api, general, "Everyone must obey me", scope="workspace").json()
    assert (narrowed["scope"], narrowed["scope_ref"]) == ("channel", "C-general")
    assert "only owners" in narrowed["scope_reason"]
    kept = remember(owner_api, general, "The office closes at six", scope="workspace").json()
    assert kept["scope"] == "workspace"


def test_a_restricted_token_stays_inside_its_channels(org, agent_with_token, agent_api, member, general, private_team):
    from accounts.models import AgentToken

    inside = remember(agent_api, private_team, "Team retro on Monday", subject_type="workspace").json()
    outside = remember(agent_api, general, "General retro on Tuesday").json()
    assert render(agent_api, general, "turn-general").status_code == 200
    AgentToken.objects.filter(agent=agent_with_token[0]).update(restricted=True, allowed_channels=["G-team"])

    assert recall(agent_api, general, "retro").status_code == 404
    assert render(agent_api, general, "turn-general-2").status_code == 404
    assert remember(agent_api, general, "Sneaky").status_code == 404
    assert agent_api.get(f"/api/v1/memories/{outside['id']}", {"place": "C-general"}).status_code == 404
    assert agent_api.get(f"/api/v1/memories/{outside['id']}", {"place": "G-team"}).status_code == 404
    assert agent_api.get("/api/v1/memories", {"place": "C-general"}).status_code == 404
    assert agent_api.get("/api/v1/injections/turn-general").status_code == 404
    listed = {row["id"] for row in agent_api.get("/api/v1/memories", {"place": "G-team"}).json()["results"]}
    assert listed == {inside["id"]}
    thread = agent_api.post(
        "/api/v1/threads/t-1/events",
        {
            "events": [
                {"role": "user", "author": "mona", "text": "hi", "time": "2026-11-30T10:00:00Z", "place": general}
            ]
        },
        format="json",
    )
    # Refused event by event: the only event was, so nothing is written and the refusal says not_found.
    assert thread.status_code == 422, thread.content
    assert thread.json()["refusals"][0]["error"]["error"] == "not_found"
    # Positive control: inside its channel the token works.
    found = recall(agent_api, private_team, "retro")
    assert [row["body"] for row in found.json()["results"]] == ["Team retro on Monday"]
    assert agent_api.get(f"/api/v1/memories/{inside['id']}", {"place": "G-team"}).status_code == 200


def test_a_record_differing_from_the_call_is_noticed_in_render_and_recall(agent_api, private_team):
    place = {**private_team, "people": ["mona"]}
    assert "record was used" in recall(agent_api, place, "x").json()["notice"]
    assert "record was used" in render(agent_api, place, "turn-notice").json()["notice"]
    assert render(agent_api, private_team, "turn-quiet").json()["notice"] == ""
