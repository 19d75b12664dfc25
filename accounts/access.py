"""Whether a person signs in: invited once, removed and restored by an owner, each audited.

An account is its holder's. Removing someone stops them signing in and keeps
their password, so restoring them gives them back their own account. An
invitation sets a password through a link the owner is shown, so it is only
for a directory person who never had an account (no username of their own,
no usable password, never signed in): inviting anyone else would hand the
owner a way into that person's account, their facts and their role.
Someone who lost their password asks an operator (`manage.py changepassword`).
"""

from __future__ import annotations

from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts.audit import account_audit
from accounts.models import AccountAudit, Membership, User
from accounts.people import DIRECTORY_USERNAME_PREFIX, refuse_name_taken
from accounts.roles import require_manager
from lib.errors import ApplicationError


class AccountIsTheirs(ApplicationError):
    """An invitation for someone who has (or had) an account of their own: answered as 409."""

    code = "conflict"
    http_status = 409

    def __init__(self, label: str):
        super().__init__(
            f"{label} already has an account and signs in themself; an operator can reset a lost password "
            "(manage.py changepassword).",
            "username",
        )


def person_invitable(membership: Membership) -> bool:
    """Whether this is a directory person who never had an account: no username, no usable password, no sign-in."""
    user = membership.user
    return (
        membership.directory
        and user.username.startswith(DIRECTORY_USERNAME_PREFIX)
        and not user.has_usable_password()
        and user.last_login is None
    )


def _locked(membership: Membership) -> Membership:
    # An owner inviting while another removes or restores the same person: the row locks order them.
    User.objects.select_for_update().filter(pk=membership.user_id).first()
    return (
        Membership.objects.select_for_update(of=("self",)).select_related("user", "organisation").get(pk=membership.pk)
    )


@transaction.atomic
def person_invite(*, membership: Membership, username: str, actor: User) -> tuple[str, str]:
    """Let a directory person sign in: give them a username and a one-time link to choose a password.

    Returns (uidb64, token) for the link. The token is Django's password-reset
    token, which stops working once a password is set, so the link works once.
    Raises `AccountIsTheirs` for anyone who is not a directory person without an account.
    """
    require_manager(actor, membership.organisation)
    membership = _locked(membership)
    if not person_invitable(membership):
        raise AccountIsTheirs(membership.label)
    username = (username or "").strip()
    if not username:
        raise ValidationError({"username": ["Choose the username this person will sign in with."]})
    user = membership.user
    refuse_name_taken(organisation=membership.organisation, name=username, field="username", person=user)
    if User.objects.filter(username=username).exclude(pk=user.pk).exists():
        raise ValidationError({"username": ["This username is taken; choose another."]})
    user.username = username
    user.full_clean(exclude=["password"])
    user.is_active = True
    user.save(update_fields=["username", "is_active"])
    membership.directory = False
    membership.save(update_fields=["directory", "updated_at"])
    account_audit(organisation=membership.organisation, action=AccountAudit.Action.INVITE, actor=actor, person=user)
    return urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)


@transaction.atomic
def person_remove(*, membership: Membership, actor: User) -> Membership:
    """Stop a person signing in, keeping their password for a restore. Erasing what is held about them is separate."""
    require_manager(actor, membership.organisation)
    if membership.user_id == actor.pk:
        raise ValidationError("You cannot remove yourself; another owner can.")
    membership = _locked(membership)
    user = membership.user
    if user.is_active:
        user.is_active = False
        user.save(update_fields=["is_active"])
        account_audit(organisation=membership.organisation, action=AccountAudit.Action.REMOVE, actor=actor, person=user)
    return membership


@transaction.atomic
def person_restore(*, membership: Membership, actor: User) -> Membership:
    """Let a removed person sign in again, with the password they had."""
    require_manager(actor, membership.organisation)
    membership = _locked(membership)
    user = membership.user
    if not user.is_active:
        user.is_active = True
        user.save(update_fields=["is_active"])
        account_audit(
            organisation=membership.organisation, action=AccountAudit.Action.RESTORE, actor=actor, person=user
        )
    return membership
