"""What a subject erasure reads from and does to a person's record: the names they go by, and their display name.

The record itself stays (an erasure is not an account deletion): its id, handle and username are how the
receipts, places and audit rows left behind still point at the person, and they are lookup keys, not words
said about anyone. The display name and the account's first and last name are what people call them, so an
erasure empties them.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from accounts.models import Membership, Organisation, User

NAME_FIELDS = ("first_name", "last_name")


@dataclass(frozen=True)
class PersonNames:
    """How a person is named: `keys` are what an integration names them by (handle, username), as a thread
    event's author does; `spoken` are what people call them (display name, first and last name)."""

    keys: tuple[str, ...] = ()
    spoken: tuple[str, ...] = ()

    @property
    def every(self) -> tuple[str, ...]:
        return self.keys + self.spoken


def person_names(*, organisation: Organisation, person_id: str) -> PersonNames:
    """The names of the organisation's person with this id; none for an id of nobody here."""
    membership = Membership.objects.select_related("user").filter(organisation=organisation, user_id=person_id).first()
    if membership is None:
        return PersonNames()
    user = membership.user
    spoken = (membership.display_name, user.get_full_name(), user.first_name, user.last_name)
    return PersonNames(
        keys=_present(membership.handle or "", user.username),
        spoken=_present(*spoken),
    )


def _present(*names: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name.strip() for name in names if name and name.strip()))


def person_display_name_erase(*, organisation: Organisation, person_id: str) -> int:
    """Empty the display name and the first and last name of the organisation's person with this id.

    Returns how many records lost a name (their membership, their account).
    """
    with transaction.atomic():
        emptied = (
            Membership.objects.filter(organisation=organisation, user_id=person_id)
            .exclude(display_name="")
            .update(display_name="", updated_at=timezone.now())
        )
        member = Membership.objects.filter(organisation=organisation, user_id=person_id)
        named = User.objects.filter(pk__in=member.values("user_id")).exclude(first_name="", last_name="")
        emptied += named.update(first_name="", last_name="")
    return emptied
