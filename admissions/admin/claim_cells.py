"""The queue's columns and the claim page's read-only fields."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from admissions.admin.common import BODY_PREVIEW_CHARS, ROW_DECISIONS, STATUS_WORDS, evidence_links, html_table
from admissions.labels import claimant_label, steward_label
from admissions.models import Decision
from admissions.selectors import claim_history, related_claims
from admissions.services import ALLOWED_FROM, decision_blocker
from memories.selectors import memory_supersede_chain


class ClaimCells:
    """How a claim reads in the queue and on its page; no decision is taken here."""

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
