"""The stewards' admin: the queue of system claims, the claim page, decisions, promotion and the audit.

Every screen here answers only to a person whose membership role is `steward`
(checked on each request, besides the Stewards group's view permissions), so
an owner, a member or even a superuser without the role sees none of it.
Nothing is editable: decisions go through the services, which write records.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from urllib.parse import urlsplit

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from admissions.forms import PromoteForm, ReasonForm
from admissions.models import AdmissionRecord, Decision, Stance, Status, SystemClaim
from admissions.selectors import claim_history, claim_queue
from admissions.services import (
    ALLOWED_FROM,
    DecisionRefused,
    admission_decide,
    claim_promote,
    is_author,
    is_steward,
    stance_create,
)
from memories.models import EVIDENCE_KINDS
from memories.selectors import memory_supersede_chain

BODY_PREVIEW_CHARS = 90
# What each refusal code reads as in a bulk action's report.
REFUSAL_WORDS = {
    DecisionRefused.OWN_CLAIM: "your own",
    DecisionRefused.TOMBSTONE: "tombstones",
    DecisionRefused.NOT_A_CLAIM: "not claims",
    DecisionRefused.SUPERSEDED: "superseded",
    DecisionRefused.ERASED: "erased",
    DecisionRefused.TRANSITION: "not in a state that takes it",
}
PAST_TENSE = {
    Decision.ADMIT: "admitted",
    Decision.REJECT: "rejected",
    Decision.CHALLENGE: "challenged",
    Decision.REVOKE: "revoked",
}


def request_is_steward(request: HttpRequest) -> bool:
    """The role check, once per request however many permission checks ask."""
    cached = getattr(request, "_admissions_is_steward", None)
    if cached is None:
        user = request.user
        cached = bool(user.is_active and user.is_staff and is_steward(user))
        request._admissions_is_steward = cached
    return cached


class StewardOnlyAdmin(admin.ModelAdmin):
    """Read-only screens for stewards; the group's view permission is needed too."""

    def has_module_permission(self, request):
        return request_is_steward(request) and super().has_module_permission(request)

    def has_view_permission(self, request, obj=None):
        return request_is_steward(request) and super().has_view_permission(request, obj)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def evidence_links(refs) -> SafeString:
    """Each ref escaped; only an http(s) address with a host becomes a link."""
    items = []
    for ref in refs or []:
        kind, target = str(ref.get("kind", "")), str(ref.get("ref", ""))
        parts = urlsplit(target)
        if parts.scheme in ("http", "https") and parts.netloc:
            shown = format_html(
                '<a href="{}" rel="noopener noreferrer nofollow" target="_blank">{}</a>', target, target
            )
        else:
            shown = format_html("<code>{}</code>", target)
        items.append((kind, shown))
    if not items:
        return format_html("<p>{}</p>", "No evidence.")
    return format_html("<ul>{}</ul>", format_html_join("", "<li>{}: {}</li>", items))


def author_label(claim) -> str:
    if claim.agent_id:
        return f"agent {claim.agent.name}"
    if claim.written_by_id:
        return f"person {claim.written_by.username}"
    return claim.source_label or "system"


class ConditionFilter(admin.SimpleListFilter):
    """A filter whose choices are conditions on the row, so its facet counts are
    `COUNT(*) FILTER (WHERE condition)` in the one aggregate query, rather than
    Django's default of one `id IN (subquery)` per choice."""

    def condition(self, value: str) -> Q | None:
        raise NotImplementedError

    def queryset(self, request, queryset):
        condition = self.condition(self.value()) if self.value() is not None else None
        return queryset.filter(condition) if condition is not None else queryset

    def get_facet_counts(self, pk_attname, filtered_qs):
        return {
            f"{index}__c": Count(pk_attname, filter=self.condition(str(value)))
            for index, (value, _) in enumerate(self.lookup_choices)
        }


class StatusFilter(ConditionFilter):
    title = "derived status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return Status.choices

    def condition(self, value):
        return Q(derived_status=value) if value in Status.values else None


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


@admin.register(SystemClaim)
class SystemClaimAdmin(StewardOnlyAdmin):
    """The queue: candidates first, oldest first; each filter's choices show how many claims match."""

    list_display = [
        "claim_text",
        "slug",
        "entity",
        "transparency",
        "as_of",
        "status",
        "evidence_count",
        "claimed_by",
        "organisation",
        "created_at",
    ]
    list_display_links = ["claim_text"]
    list_filter = [StatusFilter, "transparency", "entity", AsOfAgeFilter, EvidenceKindFilter]
    show_facets = admin.ShowFacets.ALWAYS
    search_fields = ["slug", "entity", "body"]
    list_per_page = 50
    actions = ["admit_selected", "reject_selected", "challenge_selected"]
    fieldsets = [
        (
            "Claim",
            {"fields": ["body", "slug", "entity", "transparency", "as_of", "status", "claimed_admission", "stance"]},
        ),
        ("Evidence", {"fields": ["evidence"]}),
        (
            "Author and provenance",
            {
                "fields": [
                    "claimed_by",
                    "author",
                    "organisation",
                    "source_kind",
                    "source_ref",
                    "source_label",
                    "source_run_id",
                    "created_at",
                ]
            },
        ),
        ("Supersede chain", {"fields": ["supersede_chain"]}),
        ("Admission history", {"fields": ["history"]}),
    ]
    # Every field on the page is read-only; decisions have their own pages.
    readonly_fields = [name for _, options in fieldsets for name in options["fields"]]

    def get_queryset(self, request) -> QuerySet:
        return claim_queue()

    def get_ordering(self, request):
        return ["status_rank", "created_at", "id"]

    def has_decide_permission(self, request) -> bool:
        return request_is_steward(request) and request.user.has_perm("admissions.decide_claim")

    # Columns and read-only fields

    @admin.display(description="claim")
    def claim_text(self, claim) -> str:
        if claim.redacted_at:
            return "[erased]"
        body = claim.body
        return body if len(body) <= BODY_PREVIEW_CHARS else body[: BODY_PREVIEW_CHARS - 1] + "…"

    @admin.display(description="status", ordering="status_rank")
    def status(self, claim) -> str:
        label = Status(claim.derived_status).label
        if claim.superseded_by_id and claim.superseded_by and claim.superseded_by.stance:
            return f"{label}, promoted to {claim.superseded_by.stance}"
        return label

    @admin.display(description="evidence")
    def evidence_count(self, claim) -> int:
        return claim.evidence_count

    # Not named `author`: the model has a field of that name (person or model).
    @admin.display(description="claimed by")
    def claimed_by(self, claim) -> str:
        return author_label(claim)

    @admin.display(description="claimed by its author")
    def claimed_admission(self, claim) -> str:
        return f"{claim.admission} (never counts: the status comes from the records below)"

    @admin.display(description="evidence")
    def evidence(self, claim) -> SafeString:
        return evidence_links(claim.evidence_refs)

    @admin.display(description="versions, oldest first")
    def supersede_chain(self, claim) -> SafeString:
        chain = memory_supersede_chain(memory=claim)
        items = []
        for version in chain:
            text = f"{version.stance and 'tombstone for ' + version.stance or str(version)}"
            if version.pk == claim.pk:
                items.append(format_html("<li><strong>{} (this claim)</strong></li>", text))
            else:
                url = reverse("admin:admissions_systemclaim_change", args=[version.pk])
                items.append(format_html('<li><a href="{}">{}</a></li>', url, text))
        return format_html("<ol>{}</ol>", format_html_join("", "{}", ((item,) for item in items)))

    @admin.display(description="records, oldest first")
    def history(self, claim) -> SafeString:
        records = claim_history(claim=claim)
        if not records:
            return format_html("<p>{}</p>", "No decisions yet: a candidate.")
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    timezone.localtime(record.at).strftime("%Y-%m-%d %H:%M"),
                    record.get_decision_display(),
                    record.steward.username,
                    record.reason,
                    record.stance_id or "",
                )
                for record in records
            ),
        )
        return format_html(
            "<table><thead><tr><th>when</th><th>decision</th><th>steward</th><th>reason</th><th>stance</th>"
            "</tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    # The claim page: buttons for the decisions this steward may take now.

    def change_view(self, request, object_id, form_url="", extra_context=None):
        claim = self._claim_or_404(request, object_id)
        extra_context = {**(extra_context or {}), "decisions": self._available(request, claim)}
        return super().change_view(request, object_id, form_url, extra_context)

    def _claim_or_404(self, request, object_id):
        if not self.has_view_permission(request):
            raise PermissionDenied
        claim = self.get_object(request, object_id)
        if claim is None:
            raise Http404("No such system claim.")
        return claim

    def _available(self, request, claim) -> list[tuple[str, str, str]]:
        """(label, url, decision) for each decision this steward may take on this claim now."""
        if not self.has_decide_permission(request):
            return []
        if claim.stance or claim.superseded_by_id or claim.redacted_at or is_author(claim=claim, user=request.user):
            return []
        available = []
        for decision in (Decision.ADMIT, Decision.REJECT, Decision.CHALLENGE, Decision.REVOKE):
            if claim.derived_status in ALLOWED_FROM[decision]:
                url = reverse("admin:admissions_systemclaim_decide", args=[claim.pk, decision.value])
                available.append((decision.label, url, decision.value))
        if claim.derived_status in ALLOWED_FROM[Decision.PROMOTE]:
            url = reverse("admin:admissions_systemclaim_promote", args=[claim.pk])
            available.append(("Promote to stance", url, "promote"))
        return available

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path(
                "<uuid:object_id>/decide/<str:decision>/",
                wrap(self.decide_view),
                name="admissions_systemclaim_decide",
            ),
            path("<uuid:object_id>/promote/", wrap(self.promote_view), name="admissions_systemclaim_promote"),
            *super().get_urls(),
        ]

    def _page(self, request, claim, template: str, **context) -> TemplateResponse:
        return TemplateResponse(
            request,
            template,
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "claim": claim,
                "claim_text": self.claim_text(claim),
                "claim_status": self.status(claim),
                "change_url": reverse("admin:admissions_systemclaim_change", args=[claim.pk]),
                **context,
            },
        )

    def decide_view(self, request, object_id, decision: str):
        """The confirmation page for one decision: it takes a reason, then records it."""
        if not self.has_decide_permission(request):
            raise PermissionDenied
        if decision not in PAST_TENSE:
            raise Http404("No such decision.")
        claim = self._claim_or_404(request, object_id)
        form = ReasonForm(request.POST or None)
        refusal = None
        if request.method == "POST" and form.is_valid():
            try:
                admission_decide(
                    claim=claim, steward=request.user, decision=decision, reason=form.cleaned_data["reason"]
                )
            except DecisionRefused as error:
                refusal = error.sentence
            else:
                self.message_user(request, f"Claim {PAST_TENSE[decision]}.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:admissions_systemclaim_change", args=[claim.pk]))
        return self._page(
            request,
            claim,
            "admissions/admin/decide.html",
            title=f"{Decision(decision).label} this claim?",
            decision=Decision(decision),
            form=form,
            refusal=refusal,
        )

    def promote_view(self, request, object_id):
        """Promote an admitted claim to a stance picked or created here, in one transaction."""
        if not self.has_decide_permission(request):
            raise PermissionDenied
        claim = self._claim_or_404(request, object_id)
        form = PromoteForm(request.POST or None)
        refusal = None
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                # A stance created for a promotion that is then refused must not stay behind.
                with transaction.atomic():
                    stance = data["stance"] or stance_create(
                        id=data["new_id"], title=data["new_title"], body=data["new_body"], reviewed_by=request.user
                    )
                    claim_promote(claim=claim, steward=request.user, stance=stance, reason=data["reason"])
            except DecisionRefused as error:
                refusal = error.sentence
            except ValidationError as error:
                for field, problems in error.message_dict.items():
                    target = {"id": "new_id", "title": "new_title", "body": "new_body"}.get(field)
                    form.add_error(target if target in form.fields else None, problems)
            else:
                self.message_user(request, f"Claim promoted to the stance {stance.pk}.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:admissions_systemclaim_change", args=[claim.pk]))
        return self._page(
            request,
            claim,
            "admissions/admin/promote.html",
            title="Promote this claim to a stance",
            form=form,
            refusal=refusal,
        )

    # Bulk actions: a confirmation page with a reason, then a count of decided and refused.

    def _bulk(self, request, queryset, decision: str):
        form = ReasonForm(request.POST if request.POST.get("post") == "yes" else None)
        if form.is_bound and form.is_valid():
            decided, refused = 0, Counter()
            for claim in queryset:
                try:
                    admission_decide(
                        claim=claim, steward=request.user, decision=decision, reason=form.cleaned_data["reason"]
                    )
                    decided += 1
                except DecisionRefused as error:
                    refused[error.refusal] += 1
            report = f"{decided} claim{'s' if decided != 1 else ''} {PAST_TENSE[decision]}"
            if refused:
                reasons = ", ".join(f"{count} {REFUSAL_WORDS[code]}" for code, count in sorted(refused.items()))
                report += f"; {sum(refused.values())} refused ({reasons})"
            self.message_user(request, report + ".", messages.SUCCESS if not refused else messages.WARNING)
            return None
        return self._bulk_page(request, queryset, decision, form)

    def _bulk_page(self, request, queryset, decision, form) -> TemplateResponse:
        claims = list(queryset)
        return TemplateResponse(
            request,
            "admissions/admin/bulk_decide.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "title": f"{Decision(decision).label} {len(claims)} claims?",
                "claims": [(claim, self.claim_text(claim), self.status(claim)) for claim in claims],
                "decision": Decision(decision),
                "action": f"{decision}_selected",
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
                "form": form,
            },
        )

    @admin.action(description="Admit selected claims", permissions=["decide"])
    def admit_selected(self, request, queryset):
        return self._bulk(request, queryset, Decision.ADMIT)

    @admin.action(description="Reject selected claims", permissions=["decide"])
    def reject_selected(self, request, queryset):
        return self._bulk(request, queryset, Decision.REJECT)

    @admin.action(description="Challenge selected claims", permissions=["decide"])
    def challenge_selected(self, request, queryset):
        return self._bulk(request, queryset, Decision.CHALLENGE)


@admin.register(AdmissionRecord)
class AdmissionRecordAdmin(StewardOnlyAdmin):
    """The audit: every decision by every steward, filterable by steward and by date."""

    list_display = ["at", "decision", "steward", "claim_link", "organisation", "short_reason", "stance"]
    list_filter = [("steward", admin.RelatedOnlyFieldListFilter), ("at", admin.DateFieldListFilter), "decision"]
    date_hierarchy = "at"
    search_fields = ["reason", "claim__slug"]
    list_select_related = ["steward", "organisation", "claim"]
    list_per_page = 100
    fields = ["at", "decision", "steward", "claim_link", "organisation", "reason", "stance", "tombstone_link"]
    readonly_fields = fields

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

    @admin.display(description="tombstone")
    def tombstone_link(self, record) -> SafeString | str:
        if not record.tombstone_id:
            return ""
        url = reverse("admin:admissions_systemclaim_change", args=[record.tombstone_id])
        return format_html('<a href="{}">{}</a>', url, record.tombstone_id)

    @admin.display(description="reason")
    def short_reason(self, record) -> str:
        return record.reason if len(record.reason) <= 80 else record.reason[:79] + "…"


@admin.register(Stance)
class StanceAdmin(StewardOnlyAdmin):
    """Reviewed stances; created through the promote form, never edited here."""

    list_display = ["id", "title", "reviewed_by", "reviewed_at", "promotion_count"]
    list_select_related = ["reviewed_by"]
    search_fields = ["id", "title"]
    fields = ["id", "title", "body", "reviewed_by", "reviewed_at"]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(promotion_count=Count("promotions"))

    @admin.display(description="promotions", ordering="promotion_count")
    def promotion_count(self, stance) -> int:
        return stance.promotion_count
