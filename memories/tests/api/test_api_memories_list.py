"""GET /api/v1/memories: what the caller may see, filtered, a cursor page at a time."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memories.models import Channel, ChannelMember, Memory
from memories.services import memory_redact
from memories.tests.api.helpers import remember


def listed(client, **params) -> list[str]:
    response = client.get("/api/v1/memories", params)
    assert response.status_code == 200, response.content
    return [row["body"] for row in response.json()["results"]]


def person_fact(make_memory, user, body):
    return make_memory(
        body=body,
        scope="person",
        scope_ref=str(user.pk),
        subject_type="user",
        subject_id=str(user.pk),
        # An agent's fact about the person: a person's own saved fact is always about its writer.
        bucket="learned",
        author="model",
        source_kind="message",
        owner=None,
        written_by=None,
    )


def test_a_person_sees_workspace_their_channels_and_their_own_person_facts(
    member_api, make_memory, org, member, second_member
):
    channel = Channel.objects.create(organisation=org, external_id="G-team", kind="private")
    ChannelMember.objects.create(organisation=org, channel=channel, user=member)
    make_memory(body="Workspace fact")
    make_memory(body="Team channel fact", scope="channel", scope_ref="G-team", owner=second_member)
    make_memory(body="Secret channel fact", scope="channel", scope_ref="G-secret", owner=second_member)
    person_fact(make_memory, member, "Mona's own fact")
    person_fact(make_memory, second_member, "Max's own fact")
    assert sorted(listed(member_api)) == ["Mona's own fact", "Team channel fact", "Workspace fact"]


def test_an_owner_never_sees_another_persons_facts(owner_api, make_memory, member):
    person_fact(make_memory, member, "Mona's private fact")
    make_memory(body="Workspace fact")
    assert listed(owner_api) == ["Workspace fact"]


def test_an_agent_sees_its_own_and_the_shared_facts_recallable_in_its_place(
    agent_api, second_agent_api, make_memory, general, dm_with_mona
):
    make_memory(body="Shared workspace fact")
    make_memory(body="Someone's channel fact", scope="channel", scope_ref="C-general")
    remember(agent_api, dm_with_mona, "Learned in a DM")
    remember(second_agent_api, general, "The other agent's fact")
    # Seeing follows recall: in the place it serves, what it could recall there.
    assert sorted(listed(agent_api, place="D-mona")) == ["Learned in a DM", "Shared workspace fact"]
    assert sorted(listed(agent_api, place="C-general")) == ["Shared workspace fact", "Someone's channel fact"]


def test_filters_narrow_the_list(member_api, make_memory, member):
    make_memory(body="Profile fact", tier="profile", pinned=True)
    make_memory(body="Log fact about lunch")
    make_memory(body="Candidate fact", subject_type="candidate", subject_id="cand-1")
    assert listed(member_api, tier="profile") == ["Profile fact"]
    assert listed(member_api, pinned="true") == ["Profile fact"]
    assert listed(member_api, subject_type="candidate", subject_id="cand-1") == ["Candidate fact"]
    assert listed(member_api, q="lunch") == ["Log fact about lunch"]
    assert listed(member_api, author="model") == []
    soon = (timezone.now() + timedelta(days=1)).isoformat()
    assert listed(member_api, created_after=soon) == []
    assert len(listed(member_api, expires_after=soon)) == 3


def test_the_state_filter_separates_receipts_from_live_rows(member_api, make_memory, member):
    gone = make_memory(body="Forget me")
    make_memory(body="Keep me")
    memory_redact(memory=gone, reason="asked", actor=member)
    assert listed(member_api, state="live") == ["Keep me"]
    erased = member_api.get("/api/v1/memories", {"state": "erased"}).json()["results"]
    assert [(row["body"], row["state"], row["receipt"]["reason"]) for row in erased] == [("", "erased", "asked")]


def test_an_unknown_filter_value_is_refused_by_name(member_api):
    response = member_api.get("/api/v1/memories", {"scope": "galaxy"})
    assert response.status_code == 400 and "scope" in response.json()["fields"]


def test_pages_follow_a_cursor_newest_first(member_api, make_memory):
    for index in range(5):
        make_memory(body=f"fact {index}")
    first = member_api.get("/api/v1/memories", {"page_size": 2}).json()
    assert [row["body"] for row in first["results"]] == ["fact 4", "fact 3"]
    second = member_api.get(first["next"]).json()
    third = member_api.get(second["next"]).json()
    assert [row["body"] for row in second["results"] + third["results"]] == ["fact 2", "fact 1", "fact 0"]
    assert third["next"] is None


def test_the_list_needs_credentials(client, db):
    response = client.get("/api/v1/memories")
    assert response.status_code in (401, 403)
    assert Memory.objects.count() == 0
