"""The audit: every decision by every steward."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from admissions.admin.common import StewardOnlyAdmin
from admissions.labels import steward_label
from admissions.models import AdmissionRecord


@admin.register(AdmissionRecord)
class AdmissionRecordAdmin(StewardOnlyAdmin):
    """The audit: every decision by every steward, filterable by steward and by date."""

    list_display = ["at", "decision", "steward_name", "claim_link", "organisation", "short_reason", "stance"]
    list_filter = [("steward", admin.RelatedOnlyFieldListFilter), ("at", admin.DateFieldListFilter), "decision"]
    date_hierarchy = "at"
    search_fields = ["reason", "claim__slug"]
    list_select_related = ["steward", "organisation", "claim"]
    list_per_page = 100
    fields = ["at", "decision", "steward_name", "claim_link", "organisation", "reason", "stance", "tombstone_link"]
    readonly_fields = fields  # type: ignore[assignment]  # names only here

    @admin.display(description="steward", ordering="steward__username")
    def steward_name(self, record) -> str:
        return steward_label(record.steward)

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .defer("claim__embedding", "claim__search_vector", "claim__body")
            .order_by("-at", "-id")
        )

    @admin.display(description="claim")
    def claim_link(self, record) -> SafeString:
        url = reverse("admin:admissions_systemclaim_change", args=[record.claim_id])
        return format_html('<a href="{}">{}</a>', url, record.claim.slug or record.claim_id)

    @admin.display(description="stance pointer")
    def tombstone_link(self, record) -> SafeString | str:
        if not record.tombstone_id:
            return ""
        url = reverse("admin:admissions_systemclaim_change", args=[record.tombstone_id])
        return format_html('<a href="{}">{}</a>', url, record.tombstone_id)

    @admin.display(description="reason")
    def short_reason(self, record) -> str:
        return record.reason if len(record.reason) <= 80 else record.reason[:79] + "…"
