"""The queue's filters on derived values: status, as-of age and evidence kind."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from admissions.admin.common import STATUS_WORDS
from admissions.models import Status
from lib.admin import ConditionFilter
from memories.models import EVIDENCE_KINDS


class StatusFilter(ConditionFilter):
    """Stance pointers (the rows a promotion leaves) are not claims to decide: hidden unless this filter asks."""

    title = "derived status"
    parameter_name = "status"
    EVERYTHING = "all"

    def lookups(self, request, model_admin):
        return [*STATUS_WORDS.items(), (self.EVERYTHING, "Everything, stance pointers too")]

    def condition(self, value):
        if value in Status.values:
            return Q(derived_status=value)
        if value == self.EVERYTHING:
            return Q()
        return None

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset.exclude(derived_status=Status.TOMBSTONE)
        return super().queryset(request, queryset)

    def choices(self, changelist):
        choices = list(super().choices(changelist))
        choices[0]["display"] = "Claims to review (no stance pointers)"
        return choices


class AsOfAgeFilter(ConditionFilter):
    title = "as-of age"
    parameter_name = "as_of_age"
    BANDS = {"30": "30 days or less", "90": "90 days or less", "365": "a year or less", "older": "older than a year"}

    def lookups(self, request, model_admin):
        return list(self.BANDS.items())

    def condition(self, value):
        today = timezone.localdate()
        if value == "older":
            return Q(as_of__lt=today - timedelta(days=365))
        if value in self.BANDS:
            return Q(as_of__gte=today - timedelta(days=int(value)))
        return None


class EvidenceKindFilter(ConditionFilter):
    title = "evidence kind"
    parameter_name = "evidence_kind"

    def lookups(self, request, model_admin):
        return [(kind, kind) for kind in EVIDENCE_KINDS]

    def condition(self, value):
        return Q(evidence_refs__contains=[{"kind": value}]) if value in EVIDENCE_KINDS else None
