"""Writes for agents' tokens, as the owners' pages make them: issue, restrict, the directory right, revoke.

A token's raw value exists only in the answer to `token_issue` (and
`agent_add`); only its hash is stored. Every change locks the token's row,
since two owners' pages could change one token at once and the later save
would silently drop the earlier change to the other fields.

There is no audit table for token changes yet; each change is logged on the
`archivist.tokens` logger with the actor, in the change's transaction.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import DEFAULT_TOKEN_LIFETIME, Agent, AgentToken, Organisation, User
from accounts.people import people_by_name
from lib.api.fair_share import organisation_forget

logger = logging.getLogger("archivist.tokens")

AGENT_NAME_MAX_CHARS = 100
# The database keeps each listed channel id in a varchar(200); a list is read on every call of the token.
CHANNEL_ID_MAX_CHARS = 200
MAX_LISTED_CHANNELS = 200
MAX_LISTED_PEOPLE = 200


def _log(action: str, *, token: AgentToken, actor: User | None, **details) -> None:
    logger.info(
        "token %s: %s by %s %s",
        token.hint,
        action,
        getattr(actor, "username", "a script"),
        details,
        extra={"token_id": str(token.pk), "organisation_id": str(token.organisation_id)},
    )


@transaction.atomic
def agent_add(
    *, organisation: Organisation, name: str, actor: User | None = None, lifetime: timedelta = DEFAULT_TOKEN_LIFETIME
) -> tuple[Agent, AgentToken, str]:
    """Create an agent with its first token. Returns (agent, token, raw token); the raw token is never stored."""
    name = (name or "").strip()
    if not name or len(name) > AGENT_NAME_MAX_CHARS:
        raise ValidationError({"name": [f"An agent's name is 1 to {AGENT_NAME_MAX_CHARS} characters."]})
    if Agent.objects.filter(organisation=organisation, name=name).exists():
        raise ValidationError({"name": [f"Your organisation already has an agent named {name!r}."]})
    try:
        with transaction.atomic():
            agent = Agent.objects.create(organisation=organisation, name=name)
    except IntegrityError:
        # Created concurrently under the same name: the unique constraint decided.
        raise ValidationError({"name": [f"Your organisation already has an agent named {name!r}."]}) from None
    token, raw = token_issue(agent=agent, actor=actor, lifetime=lifetime)
    return agent, token, raw


@transaction.atomic
def token_issue(
    *, agent: Agent, actor: User | None = None, lifetime: timedelta = DEFAULT_TOKEN_LIFETIME
) -> tuple[AgentToken, str]:
    """A new token for an agent, with the directory right and no restriction. Returns (token, raw token)."""
    token, raw = AgentToken.issue(agent=agent, lifetime=lifetime)
    _log("issued", token=token, actor=actor, expires_at=token.expires_at.isoformat())
    return token, raw


def _locked(token: AgentToken) -> AgentToken:
    return AgentToken.objects.select_for_update().get(pk=token.pk, organisation_id=token.organisation_id)


def _channel_ids(channels: Sequence[str]) -> list[str]:
    listed = list(dict.fromkeys(channel.strip() for channel in channels if channel and channel.strip()))
    too_long = [channel for channel in listed if len(channel) > CHANNEL_ID_MAX_CHARS]
    if too_long:
        raise ValidationError(
            {"allowed_channels": [f"A channel id is at most {CHANNEL_ID_MAX_CHARS} characters: {too_long[0][:40]}…"]}
        )
    if len(listed) > MAX_LISTED_CHANNELS:
        raise ValidationError({"allowed_channels": [f"A token lists at most {MAX_LISTED_CHANNELS} channels."]})
    return listed


def _person_ids(*, organisation: Organisation, people: Sequence[str]) -> list:
    names = list(dict.fromkeys(name.strip() for name in people if name and name.strip()))
    if len(names) > MAX_LISTED_PEOPLE:
        raise ValidationError({"allowed_people": [f"A token lists at most {MAX_LISTED_PEOPLE} people."]})
    found = people_by_name(organisation=organisation, names=names)
    unknown = [name for name in names if name not in found]
    if unknown:
        # The same answer for a stranger and another organisation's person.
        raise ValidationError(
            {"allowed_people": [f"Not a person of your organisation: {', '.join(sorted(unknown)[:10])}."]}
        )
    return list(dict.fromkeys(found[name].user_id for name in names))


@transaction.atomic
def token_restrict(
    *,
    token: AgentToken,
    restricted: bool,
    channels: Sequence[str] = (),
    people: Sequence[str] = (),
    actor: User | None = None,
) -> AgentToken:
    """Restrict a token to listed channels (external ids) and DMs with listed people (handles or usernames),
    or lift its restriction. People are stored by their stable ids; the lists are kept when lifting, so
    restricting again restores them."""
    channel_ids = _channel_ids(channels)
    person_ids = _person_ids(organisation=token.organisation, people=people)
    token = _locked(token)
    token.restricted = restricted
    token.allowed_channels = channel_ids
    token.allowed_people = person_ids
    token.save(update_fields=["restricted", "allowed_channels", "allowed_people"])
    _log(
        "restricted" if restricted else "unrestricted",
        token=token,
        actor=actor,
        channels=channel_ids,
        people=[str(person_id) for person_id in person_ids],
    )
    return token


@transaction.atomic
def token_set_directory(*, token: AgentToken, directory: bool, actor: User | None = None) -> AgentToken:
    """Take the directory right from a token (it can no longer create people or places), or give it back."""
    token = _locked(token)
    if token.directory != directory:
        token.directory = directory
        token.save(update_fields=["directory"])
        _log("directory right given" if directory else "directory right taken", token=token, actor=actor)
    return token


@transaction.atomic
def token_revoke(*, token: AgentToken, actor: User | None = None) -> AgentToken:
    """Revoke a token for good; revoking a revoked token changes nothing."""
    token = _locked(token)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        _log("revoked", token=token, actor=actor)
        # Its requests stop counting against the organisation's share as soon as the revocation commits.
        transaction.on_commit(functools.partial(organisation_forget, token.token_hash))
    return token
