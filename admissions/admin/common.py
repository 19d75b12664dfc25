"""What every screen of the stewards' console shares: the words, the steward check and the HTML helpers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString, mark_safe

from admissions.models import Decision, Status
from admissions.services import DecisionRefused, is_steward
from lib.admin import ViewOnlyAdmin

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


# Every screen answers only to a person whose membership role is `steward`, checked on each request besides
# the Stewards group's view permissions: an owner, a member or a superuser without the role sees none of it.
# Nothing is editable; decisions go through the services, which write records.
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
