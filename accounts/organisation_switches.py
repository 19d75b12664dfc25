"""An organisation's switches its owners change: whether its threads keep episodes (issue 16).

There is no audit table for organisation changes yet; as for tokens (accounts.tokens), each
change is logged on the `archivist.organisations` logger with the owner who made it, in the
change's transaction, and a change that changes nothing is not logged.
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied
from django.db import transaction

from accounts.models import Membership, Organisation, User

logger = logging.getLogger("archivist.organisations")


def organisation_set_thread_episodes(*, organisation: Organisation, keep: bool, actor: User) -> Organisation:
    """Turn the organisation's episodes on or off (off: its threads keep facts only); owners only."""
    if not Membership.objects.filter(organisation=organisation, user=actor, role=Membership.Role.OWNER).exists():
        raise PermissionDenied("Only an owner of the organisation can turn its episodes on or off.")
    with transaction.atomic():
        # NO KEY UPDATE: tenant rows' foreign-key checks on the organisation are not blocked by it.
        locked = Organisation.objects.select_for_update(no_key=True).get(pk=organisation.pk)
        if locked.thread_episodes != keep:
            locked.thread_episodes = keep
            locked.save(update_fields=["thread_episodes"])
            logger.info(
                "organisation %s: thread episodes turned %s by %s", locked.slug, "on" if keep else "off", actor.username
            )
    organisation.thread_episodes = locked.thread_episodes
    return locked
