"""The people of an organisation: members who sign in, and directory people an integration created.

Every person has one stable id, their account's id, which scopes, subjects,
place members and audit rows store. A handle (an integration's id for them,
such as a chat platform's user id) and a username are lookup keys: unique
together within the organisation, so a name always finds one person, and a
directory person invited later keeps everything said about them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q

from accounts.audit import account_audit
from accounts.models import HANDLE_MAX_CHARS, HANDLE_PATTERN, AccountAudit, Agent, Membership, Organisation, User

HANDLE_RE = re.compile(HANDLE_PATTERN)
DISPLAY_NAME_MAX_CHARS = 200
# Directory people get a username nobody would choose, never shown, until an owner invites them.
DIRECTORY_USERNAME_PREFIX = "~"


def handle_problem(handle: object) -> str:
    """Why `handle` cannot name a person, or "" when it can."""
    if not isinstance(handle, str) or not HANDLE_RE.fullmatch(handle):
        return (
            f"A handle is 1 to {HANDLE_MAX_CHARS} characters of letters, digits and . _ : @ - "
            "(a chat platform's user id, for example)."
        )
    return ""


def display_name_of(membership: Membership) -> str:
    """How pages name a person: their display name, else their handle or username (`Membership.label`)."""
    return membership.display_name or membership.label


def _by_name(names: Iterable[str]) -> Q:
    names = list(names)
    return Q(handle__in=names) | Q(user__username__in=names)


def people_by_name(*, organisation: Organisation, names: Iterable[str]) -> dict[str, Membership]:
    """Each name (a handle or a username) that names a person of the organisation, with that person.

    One query. A name of another organisation's person is simply not found.
    """
    names = [name for name in dict.fromkeys(names) if isinstance(name, str) and name]
    if not names:
        return {}
    found: dict[str, Membership] = {}
    rows = Membership.objects.select_related("user").filter(organisation=organisation).filter(_by_name(names))
    for membership in rows:
        if membership.handle in names:
            found[membership.handle] = membership
        if membership.user.username in names:
            found.setdefault(membership.user.username, membership)
    return found


def people_by_id(*, organisation: Organisation | uuid.UUID, ids: Iterable | None = None) -> dict[str, Membership]:
    """Person id -> their membership (with the account), in one query; `ids` None for everyone."""
    rows = Membership.objects.select_related("user").filter(organisation=organisation)
    if ids is not None:
        rows = rows.filter(user_id__in=[str(person_id) for person_id in ids if person_id])
    return {str(membership.user_id): membership for membership in rows}


def people_labels(*, organisation: Organisation | uuid.UUID, ids: Iterable) -> dict[str, str]:
    """Person id -> how answers name them (`Membership.label`); an id of nobody here maps to itself."""
    ids = [str(person_id) for person_id in ids]
    found = people_by_id(organisation=organisation, ids=ids) if ids else {}
    return {person_id: found[person_id].label if person_id in found else person_id for person_id in ids}


def people_display_names(*, organisation: Organisation | uuid.UUID, ids: Iterable | None = None) -> dict[str, str]:
    """Person id -> how pages name them now (`display_name_of`); `ids` None for everyone.

    Audit rows keep ids only, so a renamed or invited person shows under their current name, an erased one
    (whose display name is emptied) under their handle, and a deleted one under none.
    """
    return {
        person_id: display_name_of(membership)
        for person_id, membership in people_by_id(organisation=organisation, ids=ids).items()
    }


def person_lookup(*, organisation: Organisation, name: str) -> Membership | None:
    """The person of the organisation this handle, username or id names, or None."""
    found = people_by_name(organisation=organisation, names=[name])
    if name in found:
        return found[name]
    try:
        person_id = uuid.UUID(str(name))
    except ValueError:
        return None
    return Membership.objects.select_related("user").filter(organisation=organisation, user_id=person_id).first()


def people_of(*, organisation: Organisation):
    """The organisation's people, newest first, with their accounts."""
    return Membership.objects.select_related("user").filter(organisation=organisation).order_by("-created_at", "-id")


def refuse_name_taken(*, organisation: Organisation, name: str, field: str, person: User | None) -> None:
    """Handles and usernames are one namespace within an organisation: refuse a name another person has."""
    clash = Membership.objects.filter(organisation=organisation).filter(_by_name([name]))
    if person is not None:
        clash = clash.exclude(user=person)
    if clash.exists():
        raise ValidationError({field: [f"{name!r} already names another person of your organisation."]})


@transaction.atomic
def person_upsert(
    *, organisation: Organisation, handle: str, display_name: str, actor: User | None = None, agent: Agent | None = None
) -> tuple[Membership, bool]:
    """Create a directory person with this handle, or update their display name. Returns (membership, created).

    Both are audited with who asked (`actor` or `agent`), storing ids: a rename's row never holds the name.
    """
    problem = handle_problem(handle)
    if problem:
        raise ValidationError({"handle": [problem]})
    display_name = (display_name or "").strip()
    if len(display_name) > DISPLAY_NAME_MAX_CHARS:
        raise ValidationError({"display_name": [f"A display name is at most {DISPLAY_NAME_MAX_CHARS} characters."]})
    # Two integrations naming the same newcomer at once: the lock orders them, the unique handle decides.
    existing = (
        Membership.objects.select_for_update(of=("self",))
        .select_related("user")
        .filter(organisation=organisation, handle=handle)
        .first()
    )
    if existing is not None:
        if existing.display_name != display_name:
            existing.display_name = display_name
            existing.save(update_fields=["display_name", "updated_at"])
            account_audit(
                organisation=organisation,
                action=AccountAudit.Action.RENAME,
                actor=actor,
                agent=agent,
                person=existing.user,
            )
        return existing, False
    refuse_name_taken(organisation=organisation, name=handle, field="handle", person=None)
    user = User(username=f"{DIRECTORY_USERNAME_PREFIX}{uuid.uuid4().hex[:12]}")
    user.set_unusable_password()
    try:
        with transaction.atomic():
            user.save()
            membership = Membership.objects.create(
                organisation=organisation,
                user=user,
                role=Membership.Role.MEMBER,
                handle=handle,
                display_name=display_name,
                directory=True,
            )
    except IntegrityError:
        # Created concurrently by another call: that one stands.
        membership = Membership.objects.select_related("user").get(organisation=organisation, handle=handle)
        return membership, False
    membership.user = user
    account_audit(organisation=organisation, action=AccountAudit.Action.CREATE, actor=actor, agent=agent, person=user)
    return membership, True


def directory_people_ensure(
    *, organisation: Organisation, people: dict[str, str], agent: Agent | None = None
) -> list[str]:
    """Make each name no person of the organisation has into a directory person with that handle.

    `people` maps each name (a handle or username from another organisation or server) to a display name,
    "" when none is known. A name that is not a well-formed handle is left alone: whatever needed it refuses
    in its own words. Returns the handles created, in the order given.
    """
    names = [name for name in people if isinstance(name, str) and not handle_problem(name)]
    known = people_by_name(organisation=organisation, names=names)
    created = []
    for name in names:
        if name not in known:
            _, made = person_upsert(organisation=organisation, handle=name, display_name=people[name], agent=agent)
            if made:
                created.append(name)
    return created
