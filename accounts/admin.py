"""The operators' screens for accounts. Who may sign in, roles and an organisation's switches change only
through the audited services (accounts.access, accounts.roles, accounts.organisation_switches), here as
actions that report counts; their fields are shown, never edited by a form save. Agents and their tokens
are view-only (tokens may be revoked): they change on the owners' agents page (accounts.tokens)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest

from accounts.access import person_remove, person_restore
from accounts.models import AccountAudit, Agent, AgentToken, Membership, Organisation, User
from accounts.organisation_switches import organisation_set_system_recall, organisation_set_thread_episodes
from accounts.roles import membership_set_role
from accounts.tokens import token_revoke
from lib.admin import ViewOnlyAdmin


class OperatorActions(admin.ModelAdmin):
    """Actions that call an audited service: offered to operators (superusers) only, whom the services check too."""

    def has_operate_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_superuser)

    def each(self, request: HttpRequest, rows, change: Callable[[Any], object], done: str) -> None:
        """Apply `change` to each row through its service; count what was done and report each refusal."""
        count = 0
        for row in rows:
            try:
                change(row)
            except (ValidationError, PermissionDenied) as error:
                said = "; ".join(error.messages) if isinstance(error, ValidationError) else str(error)
                self.message_user(request, f"{row}: {said}", messages.ERROR)
            else:
                count += 1
        self.message_user(request, f"{count} {done}")


class MembershipInline(ViewOnlyAdmin, admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(User)
class UserAdmin(OperatorActions, BaseUserAdmin):
    """Whether a person may sign in is changed by the Remove and Restore actions, audited, not by a checkbox."""

    inlines = [MembershipInline]
    readonly_fields = ["is_active", "last_login", "date_joined"]
    actions = ["remove", "restore"]

    def _membership_change(self, request, users, service, done: str) -> None:
        memberships = Membership.objects.select_related("user", "organisation").filter(user__in=users)
        self.each(request, memberships, lambda row: service(membership=row, actor=request.user), done)

    @admin.action(description="Remove: they can no longer sign in (keeps the password)", permissions=["operate"])
    def remove(self, request, queryset):
        self._membership_change(request, queryset, person_remove, "people removed")

    @admin.action(description="Restore: they sign in again with their own password", permissions=["operate"])
    def restore(self, request, queryset):
        self._membership_change(request, queryset, person_restore, "people restored")


@admin.register(Organisation)
class OrganisationAdmin(OperatorActions):
    list_display = ["slug", "name", "system_recall_opt_in", "thread_episodes", "created_at"]
    search_fields = ["slug", "name"]
    readonly_fields = ["system_recall_opt_in", "thread_episodes"]
    actions = ["opt_in", "opt_out", "episodes_on", "episodes_off"]

    def _switch(self, request, queryset, service, done: str, **setting) -> None:
        self.each(request, queryset, lambda row: service(organisation=row, actor=request.user, **setting), done)

    @admin.action(description="Opt in to admitted network claims", permissions=["operate"])
    def opt_in(self, request, queryset):
        self._switch(request, queryset, organisation_set_system_recall, "organisations opted in", opt_in=True)

    @admin.action(description="Opt out of network claims", permissions=["operate"])
    def opt_out(self, request, queryset):
        self._switch(request, queryset, organisation_set_system_recall, "organisations opted out", opt_in=False)

    @admin.action(description="Keep thread episodes", permissions=["operate"])
    def episodes_on(self, request, queryset):
        self._switch(request, queryset, organisation_set_thread_episodes, "organisations keep episodes", keep=True)

    @admin.action(description="Keep facts only (no thread episodes)", permissions=["operate"])
    def episodes_off(self, request, queryset):
        self._switch(request, queryset, organisation_set_thread_episodes, "organisations keep facts only", keep=False)


@admin.register(Membership)
class MembershipAdmin(OperatorActions, ViewOnlyAdmin, admin.ModelAdmin):
    """View-only: a role changes through `membership_set_role` (the actions below), audited, with the
    stewards' admin access following it."""

    list_display = ["user", "organisation", "role", "handle", "directory"]
    list_filter = ["role", "directory"]
    list_select_related = ["user", "organisation"]
    actions = ["make_owner", "make_member", "make_steward"]

    def _set_role(self, request, queryset, role: str) -> None:
        rows = queryset.select_related("user", "organisation")
        self.each(
            request,
            rows,
            lambda row: membership_set_role(membership=row, role=role, actor=request.user),
            f"people made {role}",
        )

    @admin.action(description="Make owner", permissions=["operate"])
    def make_owner(self, request, queryset):
        self._set_role(request, queryset, Membership.Role.OWNER)

    @admin.action(description="Make member", permissions=["operate"])
    def make_member(self, request, queryset):
        self._set_role(request, queryset, Membership.Role.MEMBER)

    @admin.action(description="Make steward", permissions=["operate"])
    def make_steward(self, request, queryset):
        self._set_role(request, queryset, Membership.Role.STEWARD)


@admin.register(AccountAudit)
class AccountAuditAdmin(ViewOnlyAdmin, admin.ModelAdmin):
    """The account audit is a receipt: view-only."""

    list_display = ["at", "action", "organisation", "actor", "agent", "person"]
    list_filter = ["action"]
    list_select_related = ["organisation", "actor", "agent", "person"]


@admin.register(Agent)
class AgentAdmin(ViewOnlyAdmin, admin.ModelAdmin):
    """View-only: an agent is added, with its first token, on the owners' agents page (`agent_add`); its
    organisation never changes."""

    list_display = ["name", "organisation", "created_at"]
    list_select_related = ["organisation"]


@admin.register(AgentToken)
class AgentTokenAdmin(OperatorActions, ViewOnlyAdmin, admin.ModelAdmin):
    """View-only: a token's restriction and directory right change on the owners' agents page, through
    `accounts.tokens`, which locks the row and logs who changed what; an operator may only revoke here."""

    list_display = ["hint", "agent", "organisation", "restricted", "directory", "expires_at", "revoked_at"]
    list_filter = ["restricted", "directory"]
    list_select_related = ["agent", "organisation"]
    actions = ["revoke"]

    @admin.action(description="Revoke selected tokens", permissions=["operate"])
    def revoke(self, request, queryset):
        live = queryset.filter(revoked_at__isnull=True).select_related("organisation")
        self.each(request, live, lambda token: token_revoke(token=token, actor=request.user), "tokens revoked")
