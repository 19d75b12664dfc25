"""The token services the owners' pages use: restrict, the directory right, revoke, and new agents."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from accounts.models import AgentToken, hash_token
from accounts.people import person_upsert
from accounts.tokens import agent_add, token_issue, token_restrict, token_revoke, token_set_directory


def test_a_new_agent_comes_with_one_token_whose_raw_value_is_not_stored(org, owner):
    agent, token, raw = agent_add(organisation=org, name="scribe", actor=owner)
    assert list(agent.tokens.all()) == [token]
    assert token.token_hash == hash_token(raw) and raw not in (token.hint, token.token_hash)
    assert token.directory and not token.restricted


def test_an_agents_name_is_refused_when_taken_or_empty(org, agent):
    for name, problem in ((agent.name, "already has an agent"), ("  ", "1 to 100"), ("x" * 101, "1 to 100")):
        with pytest.raises(ValidationError) as caught:
            agent_add(organisation=org, name=name)
        assert problem in caught.value.message_dict["name"][0]
    assert org.agents.count() == 1


def test_restricting_stores_channels_and_the_ids_of_people_named_by_handle_or_username(org, agent, member):
    directory_person, _ = person_upsert(organisation=org, handle="U42", display_name="Ula")
    token, _ = token_issue(agent=agent)
    token_restrict(token=token, restricted=True, channels=["C1", "C1", " C2 "], people=["U42", "mona"])
    token.refresh_from_db()
    assert token.restricted
    assert token.allowed_channels == ["C1", "C2"]
    assert token.allowed_people == [directory_person.user_id, member.pk]

    token_restrict(token=token, restricted=False, channels=["C1"], people=[])
    token.refresh_from_db()
    assert not token.restricted and token.allowed_channels == ["C1"] and token.allowed_people == []


def test_a_person_of_another_organisation_is_not_found_for_a_restriction(org, agent, outsider, member):
    token, _ = token_issue(agent=agent)
    with pytest.raises(ValidationError) as caught:
        token_restrict(token=token, restricted=True, channels=[], people=["otto", "nobody"])
    assert caught.value.message_dict["allowed_people"] == ["Not a person of your organisation: nobody, otto."]
    token.refresh_from_db()
    assert not token.restricted and token.allowed_people == []


def test_a_channel_id_longer_than_the_column_is_refused_by_name(agent):
    token, _ = token_issue(agent=agent)
    with pytest.raises(ValidationError) as caught:
        token_restrict(token=token, restricted=True, channels=["C" * 201])
    assert "at most 200 characters" in caught.value.message_dict["allowed_channels"][0]


def test_the_directory_right_is_taken_and_given_back(agent):
    token, _ = token_issue(agent=agent)
    token_set_directory(token=token, directory=False)
    assert not AgentToken.objects.get(pk=token.pk).directory
    token_set_directory(token=token, directory=True)
    assert AgentToken.objects.get(pk=token.pk).directory


def test_revoking_twice_keeps_the_first_time(agent):
    token, _ = token_issue(agent=agent)
    first = token_revoke(token=token).revoked_at
    assert token_revoke(token=token).revoked_at == first
    assert not AgentToken.objects.usable().filter(pk=token.pk).exists()
