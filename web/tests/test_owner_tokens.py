"""Owners make agents and tokens (shown once), restrict them, take the directory right, and revoke them."""

from __future__ import annotations

import re

from django.urls import reverse

from accounts.models import Agent, AgentToken, hash_token
from accounts.people import person_upsert


def raw_token_in(response) -> str:
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    return re.search(r'<code id="raw-token">([^<]+)</code>', response.content.decode()).group(1)


def test_a_new_agents_token_is_shown_once(client, org, owner):
    client.force_login(owner)
    raw = raw_token_in(client.post(reverse("web:agents"), {"name": "scribe"}))
    token = AgentToken.objects.get(agent__name="scribe")
    assert token.token_hash == hash_token(raw)
    for url in (reverse("web:agents"), reverse("web:token-detail", args=[token.pk])):
        page = client.get(url).content.decode()
        assert raw not in page and token.hint in page


def test_a_second_token_for_an_agent(client, owner, agent):
    client.force_login(owner)
    raw = raw_token_in(client.post(reverse("web:token-create", args=[agent.pk])))
    assert agent.tokens.count() == 2 and agent.tokens.filter(token_hash=hash_token(raw)).exists()


def test_an_agent_name_already_taken_is_refused(client, owner, agent):
    client.force_login(owner)
    response = client.post(reverse("web:agents"), {"name": "helper"})
    assert response.status_code == 400 and "already has an agent named" in response.content.decode()
    assert Agent.objects.count() == 1


def test_the_list_shows_each_tokens_state(client, owner, agent):
    token = AgentToken.objects.get(agent=agent)
    client.force_login(owner)
    page = client.get(reverse("web:agents")).content.decode()
    row = re.search(rf'<tr data-token-id="{token.pk}">(.*?)</tr>', page, re.S)
    cells = re.sub(r"<[^>]+>", " ", row.group(1))
    assert "never" in cells and "not revoked" in cells and "holds it" in cells and "none" in cells


def test_restricting_a_token_to_channels_and_dms_with_people(client, org, owner, member, agent):
    person, _ = person_upsert(organisation=org, handle="U42", display_name="Ula")
    token = AgentToken.objects.get(agent=agent)
    client.force_login(owner)
    response = client.post(
        reverse("web:token-restrict", args=[token.pk]),
        {"restricted": "on", "channels": "C-design\nC-ops\n", "people": "U42, mona"},
    )
    assert response["Location"] == reverse("web:token-detail", args=[token.pk])
    token.refresh_from_db()
    assert token.restricted and token.allowed_channels == ["C-design", "C-ops"]
    assert token.allowed_people == [person.user_id, member.pk]
    page = client.get(reverse("web:token-detail", args=[token.pk])).content.decode()
    assert "to C-design, C-ops; DMs with Ula, mona" in page  # display names


def test_a_bad_restriction_is_refused_by_field_and_changes_nothing(client, owner, outsider, agent):
    token = AgentToken.objects.get(agent=agent)
    client.force_login(owner)
    cases = [
        ({"restricted": "on", "channels": "a/b"}, "no slash"),
        ({"restricted": "on", "people": "otto"}, "Not a person of your organisation: otto"),
        ({"restricted": "on"}, "can act nowhere"),
    ]
    for data, problem in cases:
        response = client.post(reverse("web:token-restrict", args=[token.pk]), data)
        assert response.status_code == 400 and problem in response.content.decode(), data
    token.refresh_from_db()
    assert not token.restricted and token.allowed_channels == [] and token.allowed_people == []


def test_the_directory_right_is_taken_and_given_back_and_a_token_revoked(client, owner, agent):
    token = AgentToken.objects.get(agent=agent)
    client.force_login(owner)
    client.post(reverse("web:token-directory", args=[token.pk]), {"directory": "take"})
    token.refresh_from_db()
    assert not token.directory
    assert "Give the directory right back" in client.get(reverse("web:token-detail", args=[token.pk])).content.decode()
    assert client.post(reverse("web:token-directory", args=[token.pk]), {"directory": "maybe"}).status_code == 400
    client.post(reverse("web:token-directory", args=[token.pk]), {"directory": "give"})
    token.refresh_from_db()
    assert token.directory

    client.post(reverse("web:token-revoke", args=[token.pk]))
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert client.get(reverse("web:token-revoke", args=[token.pk])).status_code == 405
