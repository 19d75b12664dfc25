"""One vocabulary for who did what, on every screen and in the API.

A person is "person <username>", an agent "agent <name>", a steward
"steward <display name>" (their full name, or their username when they gave
none). It lives here, below every app, so that any screen, receipt or API
response can print the same words for the same actor.
"""

from __future__ import annotations

from accounts.models import Agent, User

SYSTEM_LABEL = "system"
UNNAMED_STEWARD = "steward"


def display_name(user: User) -> str:
    return user.get_full_name().strip() or user.username


def person_label(user: User) -> str:
    return f"person {user.username}"


def agent_label(agent: Agent) -> str:
    return f"agent {agent.name}"


def steward_label(user: User) -> str:
    return f"steward {display_name(user)}"
