"""System recall in the rendered block, through POST /api/v1/render on another organisation's agent."""

from __future__ import annotations

from datetime import date

import pytest
from rest_framework.test import APIClient

from accounts.services import agent_create
from admissions.services import admission_decide
from memories.models import InjectionLine
from memories.turns.sections import render_section_providers

PLACE = {"channel": "C-general", "kind": "public", "people": []}


@pytest.fixture
def reader_api(other_org):
    _, raw = agent_create(organisation=other_org, name="globex-helper")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def admitted(make_claim, foreign_steward):
    claim = make_claim(body="The base rate is 4.75%", transparency="ledger", as_of=date.today())
    admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="Checked")
    return claim


def render(client, turn_id):
    response = client.post("/api/v1/render", {"place": PLACE, "turn_id": turn_id}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["text"]


def test_the_provider_is_registered_at_start_up():
    assert "system-recall" in dict(render_section_providers())


def test_the_block_has_no_network_section_by_default(reader_api, admitted, other_org):
    other_org.system_recall_opt_in = True
    other_org.save()
    assert "The base rate is 4.75%" not in render(reader_api, "turn-off")


def test_with_the_flag_and_the_opt_in_the_block_shows_a_labelled_section(reader_api, admitted, other_org, settings):
    settings.SYSTEM_RECALL_ENABLED = True
    assert "The base rate is 4.75%" not in render(reader_api, "turn-no-opt-in")
    other_org.system_recall_opt_in = True
    other_org.save()
    text = render(reader_api, "turn-on")
    assert "Network claims admitted by stewards" in text
    assert f"[ledger tier, as of {date.today():%Y-%m-%d}, 1 evidence ref] The base rate is 4.75%" in text
    assert InjectionLine.objects.filter(memory_id=admitted.pk).exists()


def test_a_challenged_claim_leaves_the_block(reader_api, admitted, other_org, settings, steward):
    settings.SYSTEM_RECALL_ENABLED = True
    other_org.system_recall_opt_in = True
    other_org.save()
    admission_decide(claim=admitted, steward=steward, decision="challenge", reason="Figures changed")
    assert "The base rate is 4.75%" not in render(reader_api, "turn-challenged")
