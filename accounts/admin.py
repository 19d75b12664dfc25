from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from accounts.models import Agent, AgentToken, Membership, Organisation, User


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    inlines = [MembershipInline]


@admin.register(Organisation)
class OrganisationAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "system_recall_opt_in", "created_at"]
    search_fields = ["slug", "name"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "organisation", "role"]
    list_filter = ["role"]
    list_select_related = ["user", "organisation"]


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["name", "organisation", "created_at"]
    list_select_related = ["organisation"]


@admin.register(AgentToken)
class AgentTokenAdmin(admin.ModelAdmin):
    list_display = ["hint", "agent", "organisation", "expires_at", "revoked_at", "last_used_at"]
    list_select_related = ["agent", "organisation"]
    readonly_fields = ["hint", "token_hash", "created_at", "last_used_at", "organisation", "agent"]
    actions = ["revoke"]

    def has_add_permission(self, request):
        # A token is shown once at creation, which the admin cannot do; use create_agent.
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):
        count = 0
        for token in queryset:
            if token.revoked_at is None:
                token.revoke()
                count += 1
        self.message_user(request, f"{count} tokens revoked")
