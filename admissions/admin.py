"""The stewards' admin: the queue of system claims, the claim page, decisions, promotion and the audit.

Every screen here answers only to a person whose membership role is `steward`
(checked on each request, besides the Stewards group's view permissions), so
an owner, a member or even a superuser without the role sees none of it.
Nothing is editable: decisions go through the services, which write records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import timedelta
from urllib.parse import urlsplit

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import BooleanField, Count, OuterRef, Q, QuerySet, Subquery, UUIDField, Value
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from admissions.forms import PromoteForm, ReasonForm, ReviseForm
from admissions.labels import claimant_label, steward_label
from admissions.models import AdmissionRecord, Decision, Stance, StanceVersion, Status, SystemClaim
from admissions.selectors import claim_history, claim_queue, related_claims, stance_versions
from admissions.services import (
    ALLOWED_FROM,
    DecisionRefused,
    admission_decide,
    claim_promote,
    decision_blocker,
    is_steward,
    stance_create,
    stance_retire,
    stance_retire_blocker,
    stance_revise,
)
from lib.admin import ConditionFilter, ViewOnlyAdmin
from memories.models import EVIDENCE_KINDS
from memories.selectors import memory_supersede_chain

BODY_PREVIEW_CHARS = 160
# The keys a steward decides with on the claim page (Alt+key in Chromium and Firefox on Linux and Windows).
ACCESS_KEYS = {Decision.ADMIT: "a", Decision.REJECT: "r", Decision.CHALLENGE: "c", Decision.REVOKE: "v"}
# The decisions offered on each row of the queue, in this order.
ROW_DECISIONS = (Decision.ADMIT, Decision.REJECT, Decision.CHALLENGE, Decision.REVOKE)
# What each refusal code reads as in a bulk action's report.
REFUSAL_WORDS = {
    DecisionRefused.OWN_CLAIM: "your own",
    DecisionRefused.TOMBSTONE: "stance pointers",
    DecisionRefused.NOT_A_CLAIM: "not claims",
    DecisionRefused.SUPERSEDED: "superseded",
    DecisionRefused.ERASED: "erased",
    DecisionRefused.TRANSITION: "not in a state that takes it",
}
# How a status reads on these pages: a promotion's "tombstone" row, in plain words, is a stance pointer.
STATUS_WORDS: dict[str, str] = {**{status.value: status.label for status in Status}, Status.TOMBSTONE: "Stance pointer"}
PAST_TENSE: dict[str, str] = {
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
        request._admissions_is_steward = cached  # type: ignore[attr-defined]  # memo for this request
    return cached


class StewardOnlyAdmin(ViewOnlyAdmin, admin.ModelAdmin):
    """Read-only screens for stewards; the group's view permission is needed too."""

    def has_module_permission(self, request):
        return request_is_steward(request) and super().has_module_permission(request)

    def has_view_permission(self, request, obj=None):
        return request_is_steward(request) and super().has_view_permission(request, obj)


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


def html_table(headers: Sequence[str], rows: Iterable[Sequence], *, empty: str, css_class: str = "") -> SafeString:
    """A table of cells, each escaped unless it is already safe HTML (a link, a `format_html`);
    the sentence `empty` in its place when there are no rows."""
    rows = list(rows)
    if not rows:
        return format_html("<p>{}</p>", empty)
    opening = format_html('<table class="{}">', css_class) if css_class else mark_safe("<table>")
    head = format_html_join("", "<th>{}</th>", ((header,) for header in headers))
    body = format_html_join(
        "", "<tr>{}</tr>", ((format_html_join("", "<td>{}</td>", ((cell,) for cell in row)),) for row in rows)
    )
    return format_html("{}<thead><tr>{}</tr></thead><tbody>{}</tbody></table>", opening, head, body)


def safe_next(request: HttpRequest) -> str | None:
    """Where a decision form asked to go back to, if it is on this site."""
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return None


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


@admin.register(SystemClaim)
class SystemClaimAdmin(StewardOnlyAdmin):
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

    def has_decide_permission(self, request) -> bool:
        return request_is_steward(request) and request.user.has_perm("admissions.decide_claim")

    # Columns and read-only fields

    @admin.display(description="claim")
    def claim_text(self, claim) -> str:
        if claim.redacted_at:
            return "[erased]"
        body = claim.body
        return body if len(body) <= BODY_PREVIEW_CHARS else body[: BODY_PREVIEW_CHARS - 1] + "…"

    @admin.display(description="claim", ordering="created_at")
    def claim_cell(self, claim) -> SafeString:
        url = reverse("admin:admissions_systemclaim_change", args=[claim.pk])
        meta = " · ".join(
            part for part in (claim.slug, claim.entity, claim.transparency, f"as of {claim.as_of:%Y-%m-%d}") if part
        )
        return format_html(
            '<a class="claim-link" href="{}">{}</a><div class="claim-meta">{}</div>', url, self.claim_text(claim), meta
        )

    @admin.display(description="status", ordering="status_rank")
    def status(self, claim) -> str:
        label = STATUS_WORDS[claim.derived_status]
        if claim.superseded_by_id and claim.superseded_by and claim.superseded_by.stance:
            return f"{label}, promoted to {claim.superseded_by.stance}"
        if claim.stance:
            return f"{label} for {claim.stance}"
        return label

    @admin.display(description="evidence")
    def evidence_count(self, claim) -> int:
        return claim.evidence_count

    @admin.display(description="evidence")
    def evidence_cell(self, claim) -> str:
        kinds = sorted({str(ref.get("kind", "")) for ref in claim.evidence_refs or [] if isinstance(ref, dict)})
        return f"{claim.evidence_count}: {', '.join(kinds)}" if kinds else str(claim.evidence_count)

    @admin.display(description="age", ordering="created_at")
    def age(self, claim) -> str:
        return timesince(claim.created_at, depth=1)

    @admin.display(description="decide")
    def decide_cell(self, claim) -> SafeString:
        """A small form per row: a required reason and a button per decision the status takes.

        The inputs belong to a form element outside the changelist's own form
        (the `form` attribute), since forms cannot nest.
        """
        why = self._why_not(claim, claim.viewer_id, claim.viewer_may_decide)
        if why:
            return format_html('<p class="decide-blocked">{}</p>', why)
        form_id = f"decide-{claim.pk}"
        buttons = format_html_join(
            "",
            '<button type="submit" form="{}" formaction="{}" class="decide-button decide-{}">{}</button>',
            (
                (form_id, reverse("admin:admissions_systemclaim_decide", args=[claim.pk, d.value]), d.value, d.label)
                for d in ROW_DECISIONS
                if claim.derived_status in ALLOWED_FROM[d]
            ),
        )
        # Enter in the reason field must not pick a decision: implicit submission
        # uses the form's first submit button, and a disabled one submits nothing.
        return format_html(
            '<div class="decide-row"><input type="text" name="reason" form="{}" required maxlength="2000" '
            'placeholder="Reason (required)" aria-label="Reason for deciding: {}">'
            '<button type="submit" form="{}" disabled hidden aria-hidden="true"></button>{}</div>',
            form_id,
            self.claim_text(claim),
            form_id,
            buttons,
        )

    @staticmethod
    def _why_not(claim, user_id, may_decide: bool) -> str | None:
        """The sentence shown in place of the decision buttons, or None when some decision is open."""
        if not may_decide:
            return "You may view claims but not decide them."
        blocker = decision_blocker(claim=claim, user_id=user_id)
        if blocker is not None:
            return blocker.sentence
        if not any(claim.derived_status in ALLOWED_FROM[d] for d in (*ROW_DECISIONS, Decision.PROMOTE)):
            return "No decision applies to a claim in this state."
        return None

    # Not named `author`: the model has a field of that name (person or model).
    @admin.display(description="claimed by")
    def claimed_by(self, claim) -> str:
        return claimant_label(claim)

    @admin.display(description="source")
    def source(self, claim) -> str:
        given = [
            f"{name} {value}"
            for name, value in (
                ("ref", claim.source_ref),
                ("label", claim.source_label),
                ("run", claim.source_run_id),
            )
            if value
        ]
        return ", ".join(given) or "None given"

    @admin.display(description="promoted to")
    def promoted_to(self, claim) -> SafeString | str:
        stance_id = claim.superseded_by.stance if claim.superseded_by_id and claim.superseded_by else None
        if claim.stance:
            stance_id, text = claim.stance, "This row points claims at the stance {}"
        else:
            text = "{}"
        if not stance_id:
            return "Not promoted"
        url = reverse("admin:admissions_stance_change", args=[stance_id])
        return format_html('<a href="{}">' + text + "</a>", url, stance_id)

    @admin.display(description="claims that may duplicate or contradict this one")
    def related(self, claim) -> SafeString:
        return html_table(
            ("claim", "shares", "status", "organisation", "as of"),
            (
                (
                    format_html(
                        '<a href="{}">{}</a>',
                        reverse("admin:admissions_systemclaim_change", args=[other.pk]),
                        self.claim_text(other),
                    ),
                    "same slug" if other.slug == claim.slug else "same entity",
                    self.status(other),
                    other.organisation.slug,
                    f"{other.as_of:%Y-%m-%d}",
                )
                for other in related_claims(claim=claim)
            ),
            empty="No other claim has this slug or entity.",
            css_class="related-claims",
        )

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
            text = f"pointer to the stance {version.stance}" if version.stance else str(version)
            if version.pk == claim.pk:
                items.append(format_html("<li><strong>{} (this claim)</strong></li>", text))
            else:
                url = reverse("admin:admissions_systemclaim_change", args=[version.pk])
                items.append(format_html('<li><a href="{}">{}</a></li>', url, text))
        return format_html("<ol>{}</ol>", format_html_join("", "{}", ((item,) for item in items)))

    @admin.display(description="records, oldest first")
    def history(self, claim) -> SafeString:
        return html_table(
            ("when", "decision", "steward", "reason", "stance"),
            (
                (
                    timezone.localtime(record.at).strftime("%Y-%m-%d %H:%M"),
                    record.get_decision_display(),
                    steward_label(record.steward),
                    record.reason,
                    record.stance_id or "",
                )
                for record in claim_history(claim=claim)
            ),
            empty="No decisions yet: a candidate.",
        )

    # The claim page: buttons for the decisions this steward may take now.

    def changelist_view(self, request, extra_context=None):
        return super().changelist_view(request, {"title": "System claims to decide", **(extra_context or {})})

    def change_view(self, request, object_id, form_url="", extra_context=None):
        claim = self._claim_or_404(request, object_id)
        decisions = self._available(request, claim)
        why = self._why_not(claim, request.user.pk, self.has_decide_permission(request))
        extra_context = {
            **(extra_context or {}),
            "decisions": decisions,
            "why_not": why,
            "claim_text": self.claim_text(claim),
            "decide_form": ReasonForm(),
        }
        return super().change_view(request, object_id, form_url, extra_context)

    def _claim_or_404(self, request, object_id):
        if not self.has_view_permission(request):
            raise PermissionDenied
        claim = self.get_object(request, object_id)
        if claim is None:
            raise Http404("No such system claim.")
        return claim

    def _available(self, request, claim) -> list[dict]:
        """The decisions this steward may take on this claim now, with their URLs and access keys."""
        if self._why_not(claim, request.user.pk, self.has_decide_permission(request)):
            return []
        available = []
        for decision in ROW_DECISIONS:
            if claim.derived_status in ALLOWED_FROM[decision]:
                url = reverse("admin:admissions_systemclaim_decide", args=[claim.pk, decision.value])
                available.append(
                    {"label": decision.label, "url": url, "value": decision.value, "key": ACCESS_KEYS[decision]}
                )
        if claim.derived_status in ALLOWED_FROM[Decision.PROMOTE]:
            url = reverse("admin:admissions_systemclaim_promote", args=[claim.pk])
            available.append({"label": "Promote to stance", "url": url, "value": "promote", "key": "p"})
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
                self.message_user(request, f"Claim {PAST_TENSE[decision]}: {self.claim_text(claim)}", messages.SUCCESS)
                back = safe_next(request) or reverse("admin:admissions_systemclaim_change", args=[claim.pk])
                return HttpResponseRedirect(back)
        return self._page(
            request,
            claim,
            "admissions/admin/decide.html",
            title=f"{Decision(decision).label} this claim?",
            decision=Decision(decision),
            form=form,
            refusal=refusal,
            next=safe_next(request) or "",
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
                        id=data["new_id"],
                        title=data["new_title"],
                        body=data["new_body"] or claim.body,
                        reviewed_by=request.user,
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
            decided, refused = 0, Counter[str]()
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
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
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


@admin.register(Stance)
class StanceAdmin(StewardOnlyAdmin):
    """Reviewed stances: what each says now, whether it is live, and its versions.

    Created by promoting a claim; revised (a new version) or retired here,
    never edited in place.
    """

    list_display = ["id", "title", "current_text", "state", "current_as_of", "version_count", "made_by"]
    search_fields = ["id", "title"]
    fields = ["id", "title", "body", "created_by", "reviewed_at", "versions"]
    readonly_fields = fields  # type: ignore[assignment]  # names only here

    @admin.display(description="created by")
    def created_by(self, stance) -> str:
        return steward_label(stance.reviewed_by)

    def get_queryset(self, request):
        head = StanceVersion.objects.filter(stance=OuterRef("pk"), superseded_by__isnull=True)
        return (
            super()
            .get_queryset(request)
            .select_related("reviewed_by")
            .annotate(
                version_count=Count("versions", distinct=True),
                head_text=Subquery(head.values("text")[:1]),
                head_as_of=Subquery(head.values("as_of")[:1]),
                head_retired=Subquery(head.values("retired_at")[:1]),
                head_maker=Subquery(head.values("made_by__first_name")[:1]),
                head_maker_last=Subquery(head.values("made_by__last_name")[:1]),
                head_maker_username=Subquery(head.values("made_by__username")[:1]),
            )
        )

    def has_manage_permission(self, request) -> bool:
        return request_is_steward(request) and request.user.has_perm("admissions.manage_stance")

    @admin.display(description="says now")
    def current_text(self, stance) -> str:
        text = stance.head_text or ""
        return text if len(text) <= BODY_PREVIEW_CHARS else text[: BODY_PREVIEW_CHARS - 1] + "…"

    @admin.display(description="state")
    def state(self, stance) -> str:
        if stance.head_text is None:
            return "No version yet"
        return "Retired" if stance.head_retired else "Live"

    @admin.display(description="as of")
    def current_as_of(self, stance):
        return stance.head_as_of

    @admin.display(description="versions", ordering="version_count")
    def version_count(self, stance) -> int:
        return stance.version_count

    @admin.display(description="latest version by")
    def made_by(self, stance) -> str:
        if stance.head_maker_username is None:
            return ""
        name = f"{stance.head_maker or ''} {stance.head_maker_last or ''}".strip()
        return f"steward {name or stance.head_maker_username}"

    @admin.display(description="versions, newest first")
    def versions(self, stance) -> SafeString:
        rows = []
        for version in stance_versions(stance=stance):
            if version.retired_at:
                assert version.retired_by is not None  # admissions_stance_retired_together
                state = format_html(
                    "Retired {} by {}: {}",
                    timezone.localtime(version.retired_at).strftime("%Y-%m-%d %H:%M"),
                    steward_label(version.retired_by),
                    version.retire_reason,
                )
            elif version.superseded_by_id:
                state = format_html("Replaced by version {}", version.number + 1)
            else:
                state = format_html("<strong>{}</strong>", "Live")
            sources = format_html_join(
                ", ",
                '<a href="{}">claim</a>',
                (
                    (reverse("admin:admissions_systemclaim_change", args=[link.claim_id]),)
                    for link in version.source_links.all()
                ),
            )
            rows.append(
                (
                    version.number,
                    version.text,
                    f"{version.transparency}, as of {version.as_of:%Y-%m-%d}",
                    evidence_links(version.evidence_refs),
                    sources,
                    format_html(
                        "{} ({}): {}",
                        steward_label(version.made_by),
                        timezone.localtime(version.made_at).strftime("%Y-%m-%d %H:%M"),
                        version.reason,
                    ),
                    state,
                )
            )
        return html_table(
            ("v", "text", "tier and date", "evidence", "from", "made by", "state"),
            rows,
            empty="No version yet: promote a claim to this stance.",
            css_class="stance-versions",
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        stance = self._stance_or_404(request, object_id)
        head = StanceVersion.objects.filter(stance=stance, superseded_by__isnull=True).first()
        may = self.has_manage_permission(request)
        extra_context = {
            **(extra_context or {}),
            "head": head,
            "revise_form": ReviseForm(initial={"text": head.text}) if head is not None and head.is_live else None,
            "retire_form": ReasonForm(),
            "may_manage": may,
            "why_no_retire": stance_retire_blocker(version=head, user=request.user) if may else None,
            "revise_url": reverse("admin:admissions_stance_revise", args=[stance.pk]),
            "retire_url": reverse("admin:admissions_stance_retire", args=[stance.pk]),
        }
        return super().change_view(request, object_id, form_url, extra_context)

    def _stance_or_404(self, request, object_id) -> Stance:
        if not self.has_view_permission(request):
            raise PermissionDenied
        stance = Stance.objects.filter(pk=object_id).first()
        if stance is None:
            raise Http404("No such stance.")
        return stance

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<str:object_id>/revise/", wrap(self.revise_view), name="admissions_stance_revise"),
            path("<str:object_id>/retire/", wrap(self.retire_view), name="admissions_stance_retire"),
            *super().get_urls(),
        ]

    def _change_url(self, stance) -> str:
        return reverse("admin:admissions_stance_change", args=[stance.pk])

    def revise_view(self, request, object_id):
        """POST new text for a live stance: a new version the old one points at."""
        return self._act(request, object_id, ReviseForm, "revised", stance_revise, with_text=True)

    def retire_view(self, request, object_id):
        """POST a reason to retire a live stance; refused to the steward who made its live version."""
        return self._act(request, object_id, ReasonForm, "retired", stance_retire, with_text=False)

    def _act(self, request, object_id, form_class, done: str, service, *, with_text: bool):
        if not self.has_manage_permission(request):
            raise PermissionDenied
        stance = self._stance_or_404(request, object_id)
        if request.method != "POST":
            return HttpResponseRedirect(self._change_url(stance))
        form = form_class(request.POST)
        if not form.is_valid():
            problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
            self.message_user(request, f"Nothing {done}. {problems}", messages.ERROR)
            return HttpResponseRedirect(self._change_url(stance))
        extra = {"text": form.cleaned_data["text"]} if with_text else {}
        try:
            service(stance=stance, steward=request.user, reason=form.cleaned_data["reason"], **extra)
        except ValidationError as error:
            self.message_user(request, f"Nothing {done}. {' '.join(error.messages)}", messages.ERROR)
        else:
            self.message_user(request, f"Stance {stance.pk} {done}.", messages.SUCCESS)
        return HttpResponseRedirect(self._change_url(stance))
