from django.contrib import admin
from django.db.models import F, Q

from lib.admin import DeclaredConditionFilter
from threads.models import Learning, LearningSource, Thread, ThreadEvent


class BehindFilter(DeclaredConditionFilter):
    """Threads with events the worker has not consolidated yet."""

    title = "consolidation"
    parameter_name = "consolidation"

    def declared(self):
        return {
            "behind": ("Events waiting", Q(consolidated_through__lt=F("last_sequence"))),
            "failing": ("Last run failed", ~Q(consolidation_error="")),
            "done": ("Up to date", Q(consolidated_through=F("last_sequence"))),
        }


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    list_display = ["external_id", "organisation", "last_sequence", "consolidated_through", "consolidated_at"]
    list_filter = [BehindFilter]
    list_select_related = ["organisation"]
    search_fields = ["external_id"]
    readonly_fields = [
        "organisation",
        "external_id",
        "last_sequence",
        "consolidated_through",
        "consolidated_at",
        "consolidation_error",
        "created_at",
        "updated_at",
    ]

    def has_add_permission(self, request):
        return False  # threads arrive through the ingest API


@admin.register(ThreadEvent)
class ThreadEventAdmin(admin.ModelAdmin):
    list_display = ["thread", "sequence", "role", "author", "occurred_at", "erased_at"]
    list_filter = ["role", "place_kind"]
    list_select_related = ["thread"]
    readonly_fields = [f.name for f in ThreadEvent._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class LearningSourceInline(admin.TabularInline):
    model = LearningSource
    extra = 0
    readonly_fields = ["event"]
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Learning)
class LearningAdmin(admin.ModelAdmin):
    list_display = ["memory", "key", "extractor", "thread", "created_at"]
    list_filter = ["extractor"]
    list_select_related = ["memory", "thread"]
    readonly_fields = ["organisation", "memory", "thread", "key", "extractor", "created_at"]
    inlines = [LearningSourceInline]

    def has_add_permission(self, request):
        return False
