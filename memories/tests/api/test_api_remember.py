"""POST /api/v1/memories: who writes what, in which scope, and why the scope differed."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memories.models import Channel, ChannelMember, Memory
from memories.tests.api.helpers import remember


def test_an_agent_writes_a_learned_inference_in_the_persons_scope_in_a_dm(agent_api, agent, dm_with_mona, member):
    response = remember(agent_api, dm_with_mona, "Prefers to be called Mo", tier="profile")
    assert response.status_code == 201, response.json()
    data = response.json()
    assert (data["bucket"], data["author"], data["written"]) == ("learned", "model", "inferred by an agent")
    assert (data["scope"], data["scope_ref"], data["scope_label"]) == ("person", str(member.pk), "mona")
    assert (data["subject_type"], data["subject_id"]) == ("user", str(member.pk))
    assert data["scope_reason"] == "" and data["agent"] == "helper"
    row = Memory.objects.get(pk=data["id"])
    assert row.agent_id == agent.pk and row.owner_id is None and row.written_by_id is None
    assert row.expires_at > timezone.now() + timedelta(days=89)


def test_a_person_writes_a_user_note_they_own(member_api, member, general):
    response = remember(member_api, general, "The deploy window is Tuesday")
    assert response.status_code == 201
    data = response.json()
    assert (data["bucket"], data["author"], data["written"]) == ("user", "person", "noted by a person")
    assert (data["scope"], data["scope_ref"]) == ("channel", "C-general")
    row = Memory.objects.get(pk=data["id"])
    assert row.owner_id == member.pk and row.written_by_id == member.pk and row.agent_id is None


def test_only_a_public_channel_may_write_a_workspace_fact(agent_api, general, private_team):
    public = remember(agent_api, general, "Office closes at six", scope="workspace").json()
    assert (public["scope"], public["scope_reason"]) == ("workspace", "")
    private = remember(agent_api, private_team, "Team lunch on Fridays", scope="workspace").json()
    assert (private["scope"], private["scope_ref"]) == ("channel", "G-team")
    assert "only a public channel may write a workspace fact" in private["scope_reason"]


def test_a_workspace_fact_asked_for_in_a_dm_stays_the_persons(agent_api, dm_with_mona, member):
    data = remember(agent_api, dm_with_mona, "Is allergic to nuts", scope="workspace").json()
    assert (data["scope"], data["scope_ref"]) == ("person", str(member.pk))
    assert "only a public channel" in data["scope_reason"]


def test_only_for_keeps_a_fact_for_one_person_wherever_it_is_said(agent_api, general, second_member):
    data = remember(agent_api, general, "Max's review is on Monday", only_for="max").json()
    assert (data["scope"], data["scope_ref"], data["scope_label"]) == ("person", str(second_member.pk), "max")


def test_a_person_asking_for_person_scope_in_a_group_gets_it_for_themself(member_api, member, private_team):
    response = remember(member_api, private_team, "I am out next week", scope="person")
    assert response.status_code == 201
    data = response.json()
    assert (data["scope"], data["scope_ref"]) == ("person", str(member.pk))
    assert "kept for you alone" in data["scope_reason"]


def test_a_channel_fact_asked_for_in_a_dm_is_kept_in_that_channel(agent_api, dm_with_mona):
    data = remember(
        agent_api, dm_with_mona, "We use this DM for the audit", scope="channel", subject_type="workspace"
    ).json()
    assert (data["scope"], data["scope_ref"]) == ("channel", "D-mona")


def test_a_turn_call_never_changes_a_private_channels_members(agent_api, org, private_team, member, second_member):
    channel = Channel.objects.get(organisation=org, external_id="G-team")
    before = set(ChannelMember.objects.filter(channel=channel).values_list("user_id", flat=True))
    assert before == {member.pk, second_member.pk}  # the record names both
    response = remember(agent_api, {**private_team, "people": [member.username]}, "Second")
    assert response.status_code == 201, response.content
    assert "record was used" in response.json()["notice"]
    assert "PUT /api/v1/places/G-team" in response.json()["notice"]
    assert set(ChannelMember.objects.filter(channel=channel).values_list("user_id", flat=True)) == before


def test_a_turn_call_never_adds_members_to_a_public_channel(agent_api, org, general, member, second_member):
    remember(agent_api, {**general, "people": [second_member.username]}, "Second")
    channel = Channel.objects.get(organisation=org, external_id="C-general")
    assert ChannelMember.objects.filter(channel=channel).count() == 0


def test_the_expiry_can_be_given_as_days_or_a_date(agent_api, general):
    by_days = remember(agent_api, general, "Short lived", ttl_days=3).json()
    assert timezone.datetime.fromisoformat(by_days["expires_at"]) < timezone.now() + timedelta(days=3, minutes=1)
    when = (timezone.now() + timedelta(days=10)).replace(microsecond=0)
    by_date = remember(agent_api, general, "Dated", expires_at=when.isoformat()).json()
    assert timezone.datetime.fromisoformat(by_date["expires_at"]) == when


def test_a_note_keeps_the_ordinary_expiry_it_only_fades_from_render(agent_api, general, settings):
    data = remember(agent_api, general, "Said hi", tier="note").json()
    expires = timezone.datetime.fromisoformat(data["expires_at"])
    ordinary = timezone.now() + timedelta(days=settings.MEMORY_DEFAULT_TTL_DAYS)
    assert ordinary - timedelta(minutes=1) < expires < ordinary + timedelta(minutes=1)


def test_a_candidate_subject_is_kept_with_its_id(agent_api, general):
    data = remember(agent_api, general, "Strong in SQL", subject_type="candidate", subject_id="cand-881").json()
    assert (data["subject_type"], data["subject_id"]) == ("candidate", "cand-881")


def test_a_user_subject_named_by_username_is_stored_by_account_id(agent_api, general, second_member):
    data = remember(agent_api, general, "Max runs the on-call rota", subject_type="user", subject_id="max").json()
    assert data["subject_id"] == str(second_member.pk)
