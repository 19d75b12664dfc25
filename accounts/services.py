"""Writes for accounts: organisations, people and agents."""

from __future__ import annotations

from django.db import transaction

from accounts.models import Agent, AgentToken, Membership, Organisation, User


def organisation_create(*, slug: str, name: str = "") -> Organisation:
    organisation = Organisation(slug=slug, name=name or slug)
    organisation.full_clean()
    organisation.save()
    return organisation


@transaction.atomic
def user_create(*, username: str, organisation: Organisation, role: str, password: str | None = None) -> User:
    user = User(username=username)
    user.full_clean(exclude=["password"])
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    Membership.objects.create(organisation=organisation, user=user, role=role)
    return user


@transaction.atomic
def agent_create(*, organisation: Organisation, name: str) -> tuple[Agent, str]:
    """Create an agent and its first token; the raw token is returned once and never stored."""
    agent = Agent(organisation=organisation, name=name)
    agent.full_clean()
    agent.save()
    _, raw = AgentToken.issue(agent=agent)
    return agent, raw
