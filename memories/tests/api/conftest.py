"""Fixtures for the agent-turn API: authenticated clients, places, and a quiet embedder by default."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.services import agent_create
from memories.places import place_recorded
from memories.tests.api.helpers import EmbeddingsStandIn, session_client


@pytest.fixture(autouse=True)
def no_embedder(settings):
    """Most behaviour does not depend on vectors; tests that do switch the embedder back on."""
    settings.EMBEDDER = "none"


@pytest.fixture
def agent_api(agent_with_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_with_token[1]}")
    return client


@pytest.fixture
def second_agent_api(org):
    _, raw = agent_create(organisation=org, name="second-helper")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def outsider_agent_api(other_org):
    _, raw = agent_create(organisation=other_org, name="globex-helper")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def member_api(member):
    return session_client(member)


@pytest.fixture
def owner_api(owner):
    return session_client(owner)


@pytest.fixture
def outsider_api(outsider):
    return session_client(outsider)


def recorded(org, place: dict, members: list[str] | None = None) -> dict:
    """Record the place (its record decides who is in it) and return it as a turn call names it."""
    place_recorded(
        organisation=org,
        channel=place["channel"],
        kind=place["kind"],
        people=place["people"] if members is None else members,
    )
    return place


@pytest.fixture
def dm_with_mona(org, member):
    return recorded(org, {"channel": "D-mona", "kind": "dm", "people": [member.username]})


@pytest.fixture
def general(org, member, second_member):
    return recorded(org, {"channel": "C-general", "kind": "public", "people": [member.username]}, members=[])


@pytest.fixture
def private_team(org, member, second_member):
    return recorded(org, {"channel": "G-team", "kind": "private", "people": [member.username, second_member.username]})


@pytest.fixture(scope="session")
def embeddings_stand_in():
    server = EmbeddingsStandIn()
    yield server
    server.stop()


@pytest.fixture
def stub_embedder(settings, embeddings_stand_in):
    """Recall embeds questions through the `openai` embedder, answered by the loopback stand-in."""
    settings.EMBEDDER = "openai"
    settings.EMBEDDER_OPENAI_BASE_URL = embeddings_stand_in.url
    settings.EMBEDDER_OPENAI_MODEL = "stand-in"
    return "stand-in"
