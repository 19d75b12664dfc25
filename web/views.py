"""The account holders' pages. Thin: who may see and change what is decided by memories.scopes,
reads go through selectors and writes through memories.services."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework.renderers import JSONRenderer

from accounts.models import Membership
from accounts.people import people_display_names
from memories import scopes
from memories import services as memory_services
from memories.api.serializers import SubjectEraseOutputSerializer
from memories.embeddings import embedders
from memories.models import Channel, Memory, Scope, SubjectType
from memories.places import places_for
from memories.selectors import memories_visible_to, memory_supersede_chain
from memories.services import memory_set_pinned, memory_supersede
from memories.subjects import subject_erase, subject_export, subject_export_document
from tenancy.standby import reads_from_standby
from threads.conflicts import conflict_accept, conflict_dismiss, pending_conflicts
from threads.models import Learning
from web.forms import CorrectForm, EraseEverythingForm, ForgetForm, MemoryFilterForm
from web.pages import Account, RefusedInputIs400, account_of, errors_onto, one_or_404
from web.provenance import people_named_by, why_remembered
from web.selectors import (
    conflict_episodes,
    member_names,
    memories_filtered,
    memory_search,
    memory_usage,
    owner_changes_seen_by,
    removals_of,
)

USAGE_TURNS_SHOWN = 20
ERASE_REASON = "Erased at the person's request from their Everything about me page."
ERASE_RECEIPT_SESSION_KEY = "web:erase-receipt"


class LoginView(RefusedInputIs400, auth_views.LoginView):
    pass


class PasswordChangeView(RefusedInputIs400, auth_views.PasswordChangeView):
    pass


def _visible(account: Account):
    return memories_visible_to(viewer_user=account.user, organisation=account.organisation)


def _memory_or_404(account: Account, memory_id) -> Memory:
    """A memory this person may see; any other (another organisation's, someone's person fact) is a 404."""
    rows = _visible(account).select_related("agent", "written_by", "owner").filter(pk=memory_id)
    return one_or_404(rows, "No memory you can see has this id.")


def _is_current(memory: Memory) -> bool:
    return memory.superseded_by_id is None and memory.redacted_at is None


def _can_change(memory: Memory, account: Account) -> bool:
    return _is_current(memory) and scopes.changeable_by(memory, account.viewer)


def _changeable_or_403(memory: Memory, account: Account) -> None:
    if not _is_current(memory):
        raise PermissionDenied("Only the current version of a memory can be changed.")
    if not scopes.changeable_by(memory, account.viewer):
        raise PermissionDenied("Workspace memories are changed by the organisation's owners.")


@reads_from_standby
@login_required
def memory_list(request: HttpRequest) -> HttpResponse:
    account = account_of(request)
    now = timezone.now()
    filters = MemoryFilterForm(request.GET or None)
    search = None
    searching = False
    if not request.GET or filters.is_valid():
        data = filters.cleaned_data if request.GET else {}
        searching = any(data.get(name) for name in ("q", "bucket", "scope", "tier", "pinned", "expired"))
        rows = memories_filtered(
            memories=_visible(account),
            bucket=data.get("bucket", ""),
            scope=data.get("scope", ""),
            tier=data.get("tier", ""),
            pinned=data.get("pinned", ""),
            expired=data.get("expired", ""),
            now=now,
        )
        search = memory_search(
            memories=rows,
            q=data.get("q", ""),
            mode=data.get("mode") or MemoryFilterForm.Mode.WORDS,
            page_number=request.GET.get("page"),
            **_meaning(data),
        )
    _tell_of_conflicts(request, account)
    shown = search.page.object_list if search is not None else []
    names = people_display_names(
        organisation=account.organisation, ids={row.scope_ref for row in shown if row.scope == Scope.PERSON}
    )
    return render(
        request,
        "web/memory_list.html",
        {
            "section": "memories",
            "filters": filters,
            "search": search,
            "searching": searching,
            "now": now,
            "names": names,
        },
        status=200 if search is not None else 400,
    )


def _meaning(data: dict) -> dict:
    """The question's vector for a search by meaning, or why there is none."""
    if data.get("mode") != MemoryFilterForm.Mode.MEANING or not data.get("q"):
        return {}
    try:
        vector = embedders.embed_query(data["q"])
    except embedders.EmbeddingError as error:
        return {"meaning_unavailable": f"A search by meaning failed ({error})."}
    if vector is None:
        return {"meaning_unavailable": "A search by meaning is not available: no embedder is configured."}
    return {"query_vector": vector, "embedding_model": embedders.current_model_name()}


@reads_from_standby
@login_required
def memory_detail(request: HttpRequest, memory_id) -> HttpResponse:
    account = account_of(request)
    memory = _memory_or_404(account, memory_id)
    chain = memory_supersede_chain(memory=memory)
    visible_ids = set(_visible(account).filter(pk__in=[row.pk for row in chain]).values_list("pk", flat=True))
    chain = [row for row in chain if row.pk in visible_ids]
    newest = chain[-1] if memory.superseded_by_id and chain and chain[-1].pk != memory.pk else None
    can_change = _can_change(memory, account)
    names = people_display_names(organisation=account.organisation, ids=people_named_by(memory))
    return render(
        request,
        "web/memory_detail.html",
        {
            "section": "memories",
            "memory": memory,
            "why": why_remembered(memory, viewer=account.user, names=names),
            "names": names,
            "chain": chain,
            "newest": newest,
            "usage": memory_usage(memory=memory, limit=USAGE_TURNS_SHOWN),
            "can_change": can_change,
            "is_current": _is_current(memory),
            "cannot_change_reason": "Workspace memories are corrected and forgotten by the organisation's owners.",
            "now": timezone.now(),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def memory_correct(request: HttpRequest, memory_id) -> HttpResponse:
    account = account_of(request)
    memory = _memory_or_404(account, memory_id)
    _changeable_or_403(memory, account)
    form = CorrectForm(request.POST or None, old_body=memory.body, initial={"body": memory.body})
    if request.method == "POST" and form.is_valid():
        try:
            replacement = memory_supersede(memory=memory, body=form.cleaned_data["body"], actor=account.user)
        except ValidationError as error:
            errors_onto(form, error, default_field="body")
        else:
            messages.success(request, "Corrected. The old version stays in the history.")
            return redirect("web:memory-detail", replacement.pk)
    return _form_page(request, "web/memory_correct.html", memory=memory, form=form)


def _form_page(request: HttpRequest, template: str, *, memory: Memory, form, **extra) -> HttpResponse:
    """A form about one memory; shown again after a POST only because its input was refused, hence 400."""
    context = {"section": "memories", "memory": memory, "form": form, **extra}
    return render(request, template, context, status=400 if request.method == "POST" else 200)


def _set_pinned(request: HttpRequest, memory_id, *, pinned: bool) -> HttpResponse:
    account = account_of(request)
    memory = _memory_or_404(account, memory_id)
    _changeable_or_403(memory, account)
    memory_set_pinned(memory=memory, pinned=pinned, actor=account.user)
    messages.success(request, "Pinned: agents are given it before other memories." if pinned else "Unpinned.")
    return redirect("web:memory-detail", memory.pk)


@login_required
@require_POST
def memory_pin_page(request: HttpRequest, memory_id) -> HttpResponse:
    return _set_pinned(request, memory_id, pinned=True)


@login_required
@require_POST
def memory_unpin_page(request: HttpRequest, memory_id) -> HttpResponse:
    return _set_pinned(request, memory_id, pinned=False)


@login_required
@require_http_methods(["GET", "POST"])
def memory_forget_page(request: HttpRequest, memory_id) -> HttpResponse:
    account = account_of(request)
    memory = _memory_or_404(account, memory_id)
    if memory.redacted_at is not None:
        return redirect("web:memory-receipt", memory.pk)
    _changeable_or_403(memory, account)
    form = ForgetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            memory_services.memory_forget(memory=memory, reason=form.cleaned_data["reason"], actor=account.user)
        except ValidationError as error:
            errors_onto(form, error, default_field="reason")
        else:
            return redirect("web:memory-receipt", memory.pk)
    versions = len(memory_supersede_chain(memory=memory))
    return _form_page(request, "web/memory_forget.html", memory=memory, form=form, versions=versions)


@login_required
def memory_receipt(request: HttpRequest, memory_id) -> HttpResponse:
    account = account_of(request)
    memory = _memory_or_404(account, memory_id)
    if memory.redacted_at is None:
        return redirect("web:memory-detail", memory.pk)
    versions = len(memory_supersede_chain(memory=memory))
    return render(request, "web/memory_receipt.html", {"section": "memories", "memory": memory, "versions": versions})


def _export_document(account: Account, *, now) -> tuple[dict, list[Memory]]:
    """The signed-in person's subject-access export, in the shape the API's export answers, and its rows."""
    rows = subject_export(
        organisation=account.organisation, subject_type=SubjectType.USER, subject_id=str(account.user.pk)
    )
    document = subject_export_document(
        organisation=account.organisation, subject_type=SubjectType.USER, subject_id=str(account.user.pk), now=now
    )
    return document, rows


def _about_me_context(account: Account, form: EraseEverythingForm) -> dict:
    now = timezone.now()
    _, rows = _export_document(account, now=now)
    visible_ids = set(_visible(account).filter(pk__in=[row.pk for row in rows]).values_list("pk", flat=True))
    return {
        "section": "about-me",
        "organisation": account.organisation,
        "rows": rows,
        "visible_ids": visible_ids,
        "names": people_display_names(organisation=account.organisation, ids={row.written_by_id for row in rows}),
        "form": form,
        "now": now,
    }


@login_required
def about_me(request: HttpRequest) -> HttpResponse:
    account = account_of(request)
    return render(request, "web/about_me.html", _about_me_context(account, EraseEverythingForm()))


@login_required
def about_me_export(request: HttpRequest) -> HttpResponse:
    account = account_of(request)
    now = timezone.now()
    document, _ = _export_document(account, now=now)
    response = HttpResponse(JSONRenderer().render(document), content_type="application/json")
    filename = f"archivist-everything-about-{account.user.username}-{now:%Y-%m-%d}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_http_methods(["GET", "POST"])
def about_me_erase(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return redirect("web:about-me")
    account = account_of(request)
    form = EraseEverythingForm(request.POST)
    if not form.is_valid():
        return render(request, "web/about_me.html", _about_me_context(account, form), status=400)
    result = subject_erase(
        organisation=account.organisation,
        subject_type=SubjectType.USER,
        subject_id=str(account.user.pk),
        actor=account.user,
        reason=ERASE_REASON,
    )
    # Kept in the session so the receipt page survives a reload without erasing again.
    request.session[ERASE_RECEIPT_SESSION_KEY] = json.loads(
        JSONRenderer().render(SubjectEraseOutputSerializer(result).data)
    )
    return redirect("web:about-me-erased")


@login_required
def about_me_erased(request: HttpRequest) -> HttpResponse:
    receipt = request.session.get(ERASE_RECEIPT_SESSION_KEY)
    if receipt is None:
        return redirect("web:about-me")
    for item in receipt["receipts"]:
        item["erased_at"] = parse_datetime(item["erased_at"]) if item.get("erased_at") else None
    return render(request, "web/about_me_erased.html", {"section": "about-me", "receipt": receipt})


# --- Conflicts: an agent's inference against the person's own fact ----------------


def _conflict_people(account: Account) -> list[str]:
    """Whose pending conflicts this person decides: their own, and for an owner also those of the
    organisation's directory people, who cannot sign in to decide them themselves."""
    people = [str(account.user.pk)]
    if account.viewer.is_owner:
        people += [
            str(user_id)
            for user_id in Membership.objects.filter(organisation=account.organisation, directory=True)
            .exclude(user=account.user)
            .values_list("user_id", flat=True)
        ]
    return people


def _tell_of_conflicts(request: HttpRequest, account: Account) -> None:
    count = pending_conflicts(organisation=account.organisation, subject_ids=_conflict_people(account)).count()
    if count:
        said = "one thing that contradicts" if count == 1 else f"{count} things that contradict"
        messages.info(
            request,
            format_html(
                "An agent inferred {} what you said; agents are given your own words until you decide. "
                '<a href="{}">Review them</a>.',
                said,
                reverse("web:conflict-list"),
            ),
        )


@login_required
def conflict_list(request: HttpRequest) -> HttpResponse:
    account = account_of(request)
    conflicts = list(pending_conflicts(organisation=account.organisation, subject_ids=_conflict_people(account)))
    names = people_display_names(organisation=account.organisation, ids={_contested_subject(c) for c in conflicts})
    episodes = conflict_episodes(organisation=account.organisation, conflicts=conflicts, now=timezone.now())
    seen = {row.pk for found in episodes.values() for row in found}
    visible_ids = set(_visible(account).filter(pk__in=seen).values_list("pk", flat=True))
    for conflict in conflicts:
        # Whose fact it is, when it is not the signed-in person's (an owner deciding for a directory person).
        subject = _contested_subject(conflict)
        mine = subject == str(account.user.pk)
        # For the template: whose fact, and the transcript lines recall still finds.
        conflict.for_whom = "" if mine else names.get(subject, "")  # type: ignore[attr-defined]
        conflict.episodes = episodes.get(conflict.pk, [])  # type: ignore[attr-defined]
    context = {"section": "memories", "conflicts": conflicts, "visible_ids": visible_ids}
    return render(request, "web/conflict_list.html", context)


def _contested_subject(conflict: Learning) -> str:
    """Whose own fact a pending conflict contests."""
    assert conflict.conflicts_with is not None  # a pending conflict names it (threads_learning_conflict_shape)
    return conflict.conflicts_with.subject_id


def _decide(request: HttpRequest, learning_id: int, decide, done: str) -> HttpResponse:
    account = account_of(request)
    allowed = pending_conflicts(organisation=account.organisation, subject_ids=_conflict_people(account))
    if not allowed.filter(pk=learning_id).exists():
        raise Http404("No pending conflict of yours has this id.")
    try:
        decide(organisation=account.organisation, learning_id=learning_id, actor=account.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("web:conflict-list")
    messages.success(request, done)
    return redirect("web:conflict-list")


@login_required
@require_POST
def conflict_accept_view(request: HttpRequest, learning_id: int) -> HttpResponse:
    return _decide(request, learning_id, conflict_accept, "Accepted: the agent's inference replaced what you said.")


@login_required
@require_POST
def conflict_dismiss_view(request: HttpRequest, learning_id: int) -> HttpResponse:
    return _decide(request, learning_id, conflict_dismiss, "Dismissed: the inference was forgotten; a receipt stays.")


@login_required
def my_places(request: HttpRequest) -> HttpResponse:
    """The places this person may act in, from their records, with the owners' recent changes to them."""
    account = account_of(request)
    changes = owner_changes_seen_by(organisation=account.organisation, user=account.user)
    records = places_for(organisation=account.organisation, user=account.user)
    names = people_display_names(
        organisation=account.organisation, ids={pid for record in records for pid in record.member_ids}
    )
    places = []
    for record in records:
        listed = str(account.user.pk) in record.member_ids
        places.append(
            {
                "record": record,
                # Who is in a public channel decides nothing: anyone in the organisation reads it.
                "people": member_names(record, names) if record.channel.kind != Channel.Kind.PUBLIC else [],
                "listed": listed,
                "changes": changes.get(record.channel.external_id, []) if listed else [],
            }
        )
    context = {
        "section": "places-mine",
        "places": places,
        "removals": removals_of(organisation=account.organisation, user=account.user),
    }
    return render(request, "web/my_places.html", context)
