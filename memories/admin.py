from django.contrib import admin
from django.db.models import Q

from lib.admin import DeclaredConditionFilter, ViewOnlyAdmin
from memories.embeddings.embedders import current_model_name
from memories.models import Channel, ChannelMember, Memory, MemoryAudit, PlaceAudit

PROVENANCE_FIELDS = ["author", "written_by", "source_kind", "source_ref", "source_label", "source_run_id"]
SYSTEM_FIELDS = ["slug", "entity", "transparency", "as_of", "admission", "evidence_refs", "stance", "promoted"]
ERASURE_FIELDS = ["redacted_at", "redacted_by", "redacted_by_label", "redaction_reason"]


class SearchableFilter(DeclaredConditionFilter):
    """Whether a row has a vector of the current model, is waiting for one, or failed to get one."""

    title = "searchable"
    parameter_name = "searchable"

    def declared(self):
        live, current = Q(redacted_at__isnull=True), current_model_name()
        embedded = Q(embedding_model=current) & ~Q(embedding_model="")
        return {
            "yes": ("Yes", live & embedded),
            "waiting": ("Waiting for a worker", live & ~Q(embedding_model=current) & Q(embedding_error="")),
            "failed": ("Embedding failed", live & ~Q(embedding_model=current) & ~Q(embedding_error="")),
        }


@admin.register(Memory)
class MemoryAdmin(ViewOnlyAdmin, admin.ModelAdmin):
    """View-only. Memories are written through the API and its services, which check the rules.

    A memory's scope, tier and expiry decide who is shown it and for how long; the
    services change them with an audit row, a form save would not. Rows are never
    deleted by hand: forgetting erases the text and keeps the receipt (the API's
    forget and subject erasure), and the nightly purge removes expired rows.
    """

    list_display = [
        "short_body",
        "organisation",
        "bucket",
        "scope",
        "tier",
        "pinned",
        "searchable",
        "expires_at",
        "created_at",
    ]
    list_filter = ["bucket", "scope", "tier", "pinned", "author", SearchableFilter]
    list_select_related = ["organisation"]
    search_fields = ["body", "subject_id", "source_ref"]
    readonly_fields = [
        "id",
        "organisation",
        "owner",
        "agent",
        "bucket",
        "body",
        "subject_type",
        "subject_id",
        *PROVENANCE_FIELDS,
        *SYSTEM_FIELDS,
        *ERASURE_FIELDS,
        "superseded_by",
        "embedding_model",
        "embedding_attempts",
        "embedding_error",
        "created_at",
        "updated_at",
    ]
    exclude = ["embedding", "search_vector"]

    @admin.display(description="body")
    def short_body(self, memory: Memory) -> str:
        return str(memory)

    @admin.display(description="searchable", boolean=False)
    def searchable(self, memory: Memory) -> str:
        if memory.redacted_at:
            return "erased"
        current = current_model_name()
        if not current:
            return "lexically only (no embedder)"
        if memory.embedding_model == current:
            return "yes"
        if memory.embedding_error:
            tries = "attempt" if memory.embedding_attempts == 1 else "attempts"
            return f"not yet searchable after {memory.embedding_attempts} {tries}: {memory.embedding_error[:160]}"
        if memory.embedding_model:
            return f"not yet searchable: its vector is from {memory.embedding_model}, waiting for {current}"
        return "not yet searchable: waiting for a worker"


class ChannelMemberInline(ViewOnlyAdmin, admin.TabularInline):
    model = ChannelMember
    extra = 0


class PlaceAuditInline(ViewOnlyAdmin, admin.TabularInline):
    model = PlaceAudit
    extra = 0
    fields = readonly_fields = ("at", "actor", "agent", "kind_from", "kind_to", "added", "removed")


@admin.register(Channel)
class ChannelAdmin(ViewOnlyAdmin, admin.ModelAdmin):
    """View-only. A place's kind and members change through `PUT /api/v1/places/{channel}` or the owners'
    place page (memories.places.place_write), which keep a DM bound to its person and write its audit."""

    list_display = ["external_id", "organisation", "kind", "updated_at"]
    list_filter = ["kind"]
    list_select_related = ["organisation"]
    inlines = [ChannelMemberInline, PlaceAuditInline]


@admin.register(MemoryAudit)
class MemoryAuditAdmin(ViewOnlyAdmin, admin.ModelAdmin):
    """The audit is a receipt: view-only."""

    list_display = ["at", "action", "actor_label", "memory_id", "organisation"]
    list_filter = ["action"]
    list_select_related = ["organisation"]
    readonly_fields = ["organisation", "memory", "action", "actor", "actor_label", "detail", "at"]
