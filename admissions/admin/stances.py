"""Reviewed stances: what each says now, its versions, revise and retire."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, OuterRef, Subquery
from django.http import Http404, HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from admissions.admin.common import (
    BODY_PREVIEW_CHARS,
    StewardOnlyAdmin,
    evidence_links,
    html_table,
    request_is_steward,
)
from admissions.forms import ReasonForm, ReviseForm
from admissions.labels import steward_label
from admissions.models import Stance, StanceVersion
from admissions.selectors import stance_versions
from admissions.services import stance_retire, stance_retire_blocker, stance_revise


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
