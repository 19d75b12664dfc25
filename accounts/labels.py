"""One vocabulary for naming actors, who did what, on every screen, receipt and API response.

A person is "person <username>", an agent "agent <name>", a steward "steward <name>"; a receipt stores
"agent:<name>", "user:<username>" or "system". How a person is named as a member is `accounts.people`'s.
"""

from __future__ import annotations

from accounts.models import Agent, User

SYSTEM_LABEL = "system"
UNNAMED_STEWARD = "steward"


def steward_name(user: User) -> str:
    """A steward's full name, or their username when they gave none."""
    return user.get_full_name().strip() or user.username


def person_actor_label(user: User) -> str:
    return f"person {user.username}"


def agent_label(agent: Agent) -> str:
    return f"agent {agent.name}"


def steward_label(user: User) -> str:
    return f"steward {steward_name(user)}"


def receipt_actor_label(*, agent: Agent | None, user: User | None) -> str:
    """Who acted, as a receipt stores it: the agent when there is one, else the person, else the system."""
    if agent is not None:
        return f"agent:{agent.name}"
    if user is not None:
        return f"user:{user.username}"
    return SYSTEM_LABEL
