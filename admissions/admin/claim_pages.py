"""The claim page's decisions: one decision, a promotion, and the bulk actions."""

from __future__ import annotations

from collections import Counter

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from admissions.admin.claim_cells import ClaimCells
from admissions.admin.common import (
    ACCESS_KEYS,
    PAST_TENSE,
    REFUSAL_WORDS,
    ROW_DECISIONS,
    StewardOnlyAdmin,
    request_is_steward,
    safe_next,
)
from admissions.forms import PromoteForm, ReasonForm
from admissions.models import Decision
from admissions.services import ALLOWED_FROM, DecisionRefused, admission_decide, claim_promote, stance_create


class ClaimDecisions(ClaimCells, StewardOnlyAdmin):
    """The pages and actions that record a steward's decision through the services."""

    def has_decide_permission(self, request) -> bool:
        return request_is_steward(request) and request.user.has_perm("admissions.decide_claim")

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
