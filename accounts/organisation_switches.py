"""An organisation's switches: whether its threads keep episodes (its owners' choice) and whether it recalls
admitted network claims (an operator's, in the admin).

Each change locks the organisation's row and writes an account audit row (who, which switch, the new
setting) in its transaction; a change that changes nothing writes nothing.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction

from accounts.audit import account_audit
from accounts.models import AccountAudit, Organisation, User
from accounts.roles import is_operator, require_manager

THREAD_EPISODES = "thread_episodes"
SYSTEM_RECALL_OPT_IN = "system_recall_opt_in"


def _switch(*, organisation: Organisation, switch: str, on: bool, actor: User) -> Organisation:
    with transaction.atomic():
        # NO KEY UPDATE: tenant rows' foreign-key checks on the organisation are not blocked by it.
        locked = Organisation.objects.select_for_update(no_key=True).get(pk=organisation.pk)
        if getattr(locked, switch) != on:
            setattr(locked, switch, on)
            locked.save(update_fields=[switch])
            account_audit(organisation=locked, action=AccountAudit.Action.SWITCH, actor=actor, switch=switch, on=on)
    setattr(organisation, switch, on)
    return locked


def organisation_set_thread_episodes(*, organisation: Organisation, keep: bool, actor: User) -> Organisation:
    """Turn the organisation's episodes on or off (off: its threads keep facts only); owners and operators."""
    try:
        require_manager(actor, organisation)
    except PermissionDenied:
        raise PermissionDenied("Only an owner of the organisation can turn its episodes on or off.") from None
    return _switch(organisation=organisation, switch=THREAD_EPISODES, on=keep, actor=actor)


def organisation_set_system_recall(*, organisation: Organisation, opt_in: bool, actor: User) -> Organisation:
    """Opt the organisation in to admitted network claims, or out; an operator's decision."""
    if not is_operator(actor):
        raise PermissionDenied("Only an operator opts an organisation in to network claims.")
    return _switch(organisation=organisation, switch=SYSTEM_RECALL_OPT_IN, on=opt_in, actor=actor)
