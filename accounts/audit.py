"""The account audit's one writer: each audited change to a person or an organisation calls it in its own
transaction, so the row exists exactly when the change does."""

from __future__ import annotations

from accounts.models import AccountAudit, Agent, Organisation, User


def account_audit(
    *,
    organisation: Organisation,
    action: str,
    actor: User | None = None,
    agent: Agent | None = None,
    person: User | None = None,
    **detail: object,
) -> AccountAudit:
    """Record `action` by `actor` (or `agent`) on `person`; `detail` holds values only, never a name."""
    return AccountAudit.objects.create(
        organisation=organisation, action=action, actor=actor, agent=agent, person=person, detail=detail
    )


def account_changes(*, organisation: Organisation, person: User | None = None):
    """The organisation's account audit, newest first; one person's when `person` is given."""
    rows = AccountAudit.objects.filter(organisation=organisation).select_related("actor", "agent")
    if person is not None:
        rows = rows.filter(person=person)
    return rows.order_by("-at", "-id")
