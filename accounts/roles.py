"""Who may change an organisation's people, and the one writer of a person's role.

Two authorities: an operator (a superuser, in the admin or a script) and an
owner of the organisation. An owner makes people owners or members; steward
is a role across organisations (it reaches every organisation's claims in
the admin), so only an operator grants or takes it, and an owner cannot
change a steward's role. An organisation always keeps one owner.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from accounts.audit import account_audit
from accounts.models import AccountAudit, Membership, Organisation, User

OWNER_GRANTS = (Membership.Role.OWNER, Membership.Role.MEMBER)


def is_operator(actor: User | None) -> bool:
    return actor is not None and actor.is_active and actor.is_superuser


def is_owner_of(actor: User | None, organisation: Organisation) -> bool:
    return (
        actor is not None
        and actor.is_active
        and Membership.objects.filter(organisation=organisation, user=actor, role=Membership.Role.OWNER).exists()
    )


def require_manager(actor: User | None, organisation: Organisation) -> None:
    """Refuse anyone but an operator or an owner of `organisation`."""
    if not (is_operator(actor) or is_owner_of(actor, organisation)):
        raise PermissionDenied("Only an owner of the organisation, or an operator, changes its people.")


def _role_problem(*, actor: User, current: str, wanted: str) -> str:
    """Why `actor` may not change a role from `current` to `wanted`, or "" when they may."""
    if wanted not in Membership.Role.values:
        return f"{wanted!r} is not a role; use one of {', '.join(Membership.Role.values)}."
    if is_operator(actor):
        return ""
    if wanted not in OWNER_GRANTS or current not in OWNER_GRANTS:
        return "Only an operator grants or takes the steward role."
    return ""


@transaction.atomic
def membership_set_role(*, membership: Membership, role: str, actor: User) -> Membership:
    """Change a person's role, audited with who changed it; a change that changes nothing writes nothing.

    Raises `PermissionDenied` for anyone but an owner or an operator, and
    `ValidationError` (on `role`) for a role the actor may not give, or for
    the organisation's last owner.
    """
    organisation = membership.organisation
    require_manager(actor, organisation)
    # Two owners demoting each other at once would each see the other still an owner; the locks order them.
    owners = list(
        Membership.objects.select_for_update()
        .filter(organisation=organisation, role=Membership.Role.OWNER)
        .values_list("pk", flat=True)
    )
    locked = Membership.objects.select_for_update().select_related("user", "organisation").get(pk=membership.pk)
    problem = _role_problem(actor=actor, current=locked.role, wanted=role)
    if not problem and locked.pk in owners and role != Membership.Role.OWNER and len(owners) == 1:
        problem = "An organisation keeps at least one owner; make someone else an owner first."
    if problem:
        raise ValidationError({"role": [problem]})
    if locked.role != role:
        account_audit(
            organisation=organisation,
            action=AccountAudit.Action.ROLE,
            actor=actor,
            person=locked.user,
            role_from=locked.role,
            role_to=role,
        )
        locked.role = role
        # Saved with the model's save, so the stewards' access follows the role (admissions.signals).
        locked.save(update_fields=["role", "updated_at"])
    return locked
