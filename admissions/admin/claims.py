"""The queue of system claims: candidates first, oldest first."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import BooleanField, QuerySet, UUIDField, Value

from admissions.admin.claim_pages import ClaimDecisions
from admissions.admin.filters import AsOfAgeFilter, EvidenceKindFilter, StatusFilter
from admissions.models import SystemClaim
from admissions.selectors import claim_queue


@admin.register(SystemClaim)
class SystemClaimAdmin(ClaimDecisions):
    """The queue: candidates first, oldest first; each filter's choices show how many claims match."""

    list_display = ["claim_cell", "status", "evidence_cell", "organisation", "claimed_by", "age", "decide_cell"]
    list_display_links = None
    list_filter = [StatusFilter, "transparency", "entity", AsOfAgeFilter, EvidenceKindFilter]
    show_facets = admin.ShowFacets.ALWAYS
    search_fields = ["slug", "entity", "body"]
    list_per_page = 50
    actions = ["admit_selected", "reject_selected", "challenge_selected"]
    fieldsets = [
        (
            "Claim",
            {
                "fields": [
                    "body",
                    "slug",
                    "entity",
                    "transparency",
                    "as_of",
                    "status",
                    "claimed_admission",
                    "promoted_to",
                ]
            },
        ),
        ("Evidence", {"fields": ["evidence"]}),
        ("Other claims with the same slug or entity", {"fields": ["related"]}),
        ("Who claimed it", {"fields": ["claimed_by", "organisation", "source", "created_at"]}),
        ("Supersede chain", {"fields": ["supersede_chain"]}),
        ("Admission history", {"fields": ["history"]}),
    ]
    # Every field on the page is read-only; decisions go through the services.
    readonly_fields = [name for _, options in fieldsets for name in options["fields"]]  # type: ignore[misc]  # names only here

    def get_queryset(self, request) -> QuerySet:
        # Who is looking, annotated once, so each row can say whether this
        # steward may decide it without a query per row.
        return claim_queue().annotate(
            viewer_id=Value(request.user.pk, output_field=UUIDField()),
            viewer_may_decide=Value(self.has_decide_permission(request), output_field=BooleanField()),
        )

    def get_ordering(self, request):
        return ["status_rank", "created_at", "id"]
