"""The operators' admin shows agents and their tokens and changes neither: a token's restriction and directory
right, and an agent's organisation, change only on the owners' agents page through `accounts.tokens`, which
logs who changed what. The one write offered here, revoking, goes through `token_revoke` too."""

from __future__ import annotations

import logging

import pytest

from accounts.models import Agent, AgentToken

pytestmark = pytest.mark.django_db


def test_a_tokens_restriction_and_directory_right_cannot_be_changed_in_the_admin(admin_client, agent):
    token = AgentToken.objects.get(agent=agent)
    page = admin_client.get(f"/admin/accounts/agenttoken/{token.pk}/change/")
    assert page.status_code == 200 and token.hint in page.content.decode()  # positive control: shown
    assert 'name="restricted"' not in page.content.decode() and 'name="directory"' not in page.content.decode()
    response = admin_client.post(
        f"/admin/accounts/agenttoken/{token.pk}/change/",
        {
            "expires_at_0": "2999-01-01",
            "expires_at_1": "00:00:00",
            "restricted": "",
            "allowed_channels": "C-everywhere",
            "allowed_people": "",
            "directory": "",
        },
    )
    assert response.status_code == 403
    assert AgentToken.objects.filter(pk=token.pk).values("restricted", "directory", "allowed_channels").get() == {
        "restricted": False,
        "directory": True,
        "allowed_channels": [],
    }
    assert admin_client.get("/admin/accounts/agenttoken/add/").status_code == 403
    assert admin_client.post(f"/admin/accounts/agenttoken/{token.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AgentToken.objects.filter(pk=token.pk).exists()


def test_an_agents_organisation_cannot_be_changed_in_the_admin(admin_client, agent, other_org):
    page = admin_client.get(f"/admin/accounts/agent/{agent.pk}/change/")
    assert page.status_code == 200 and "helper" in page.content.decode()  # positive control: shown
    assert 'name="organisation"' not in page.content.decode()
    response = admin_client.post(
        f"/admin/accounts/agent/{agent.pk}/change/", {"organisation": other_org.pk, "name": "moved"}
    )
    assert response.status_code == 403
    assert Agent.objects.filter(pk=agent.pk).values_list("organisation_id", "name").get() == (
        agent.organisation_id,
        "helper",
    )
    assert admin_client.get("/admin/accounts/agent/add/").status_code == 403
    assert admin_client.post(f"/admin/accounts/agent/{agent.pk}/delete/", {"post": "yes"}).status_code == 403


def test_revoking_in_the_admin_goes_through_the_service_and_is_logged(admin_client, admin_user, agent, caplog):
    token = AgentToken.objects.get(agent=agent)
    with caplog.at_level(logging.INFO, logger="archivist.tokens"):
        page = admin_client.post(
            "/admin/accounts/agenttoken/",
            {"action": "revoke", "_selected_action": [str(token.pk)]},
            follow=True,
        ).content.decode()
        again = admin_client.post(
            "/admin/accounts/agenttoken/",
            {"action": "revoke", "_selected_action": [str(token.pk)]},
            follow=True,
        ).content.decode()
    assert "1 tokens revoked" in page and "0 tokens revoked" in again
    assert AgentToken.objects.get(pk=token.pk).revoked_at is not None
    logged = [record.getMessage() for record in caplog.records if record.name == "archivist.tokens"]
    assert logged == [f"token {token.hint}: revoked by {admin_user.username} {{}}"]
