"""Helpers for thread tests: ingesting events as an agent would, and consolidating them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

# The agent-turn API's clients: an agent of `org` and one of `other_org`, by Bearer token.
from memories.tests.api.conftest import agent_api, outsider_agent_api  # noqa: F401
from threads.ingest import thread_events_ingest

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def facts_only_unless_asked(request, settings):
    """The fact tests count learned facts alone: episodes are on only for tests using `episodes_on`."""
    settings.THREAD_EPISODES = "episodes_on" in request.fixturenames


@pytest.fixture
def episodes_on(settings):
    settings.THREAD_EPISODES = True


@pytest.fixture
def post_events(org, agent):
    """post_events(thread_id, [(author, text), ...], place=...) stores user events through the service."""
    counter = {"n": 0}

    def post(thread_id: str, lines, *, place: dict, role: str = "user", organisation=None, by=None):
        events = []
        for line in lines:
            author, text = line[0], line[1]
            counter["n"] += 1
            events.append(
                {
                    "id": f"evt-{counter['n']}",
                    "role": line[2] if len(line) > 2 else role,
                    "author": author,
                    "text": text,
                    "time": START + timedelta(minutes=counter["n"]),
                    "place": place,
                }
            )
        thread, _ = thread_events_ingest(
            organisation=organisation or org, agent=by or agent, thread_id=thread_id, events=events
        )
        return thread

    return post


@pytest.fixture
def dm_with(member):
    return {"channel": "D-mona", "kind": "dm", "people": [member.username]}


@pytest.fixture
def private_channel(member, second_member):
    return {"channel": "C-private", "kind": "private", "people": [member.username, second_member.username]}


@pytest.fixture
def public_channel(member):
    return {"channel": "C-general", "kind": "public", "people": [member.username]}
