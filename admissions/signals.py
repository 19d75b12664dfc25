"""Keeps a person's admin access in step with their role, however the membership changed."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from accounts.models import Membership, User
from admissions.services import steward_access_sync


@receiver(post_save, sender=Membership, dispatch_uid="admissions_steward_access_on_save")
def membership_saved(sender, instance: Membership, raw: bool = False, **kwargs) -> None:
    if raw:  # fixtures load rows as they are
        return
    steward_access_sync(user=instance.user)


@receiver(post_delete, sender=Membership, dispatch_uid="admissions_steward_access_on_delete")
def membership_deleted(sender, instance: Membership, **kwargs) -> None:
    user = User.objects.filter(pk=instance.user_id).first()
    if user is not None:
        steward_access_sync(user=user)
