from django.contrib import admin
from django.db.models import F

from threads.models import Learning, LearningSource, Thread, ThreadEvent


class BehindFilter(admin.SimpleListFilter):
    """Threads with events the worker has not consolidated yet."""

    title = "consolidation"
    parameter_name = "consolidation"

    def lookups(self, request, model_admin):
        return [("behind", "Events waiting"), ("failing", "Last run failed"), ("done", "Up to date")]

    def queryset(self, request, queryset):
        if self.value() == "behind":
            return queryset.filter(consolidated_through__lt=F("last_sequence"))
        if self.value() == "failing":
            return queryset.exclude(consolidation_error="")
        if self.value() == "done":
            return queryset.filter(consolidated_through=F("last_sequence"))
        return queryset


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
