"""One vocabulary for who did what, on every screen and in the API.

A person is "person <username>", an agent "agent <name>", a steward
"steward <display name>" (their full name, or their username when they gave
none). The admin, the claim pages and the API all print these, so the same
actor reads the same everywhere.
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


def claimant_label(claim) -> str:
    """Who submitted a claim: its agent or its person (select_related both to keep a list at one query)."""
    if claim.agent_id:
        return agent_label(claim.agent)
    if claim.written_by_id:
        return person_label(claim.written_by)
    return claim.source_label or SYSTEM_LABEL
