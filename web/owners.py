"""The owners' pages: the people of their organisation, its places and their audit, its agents' tokens,
and its switches (episodes).

Every view takes the owner and the organisation from the session and looks
rows up inside that organisation only, so another organisation's row is a 404
and a member's visit a 403. Writes go through the audited services
(accounts.people, accounts.access, accounts.roles, accounts.tokens,
memories.places); a secret (an invitation link, a raw token) is in the answer
to the POST that made it and nowhere else.
"""

from __future__ import annotations

import functools

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import PasswordResetConfirmView
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.access import AccountIsTheirs, person_invitable, person_invite, person_remove, person_restore
from accounts.models import AgentToken, Membership
from accounts.organisation_switches import organisation_set_thread_episodes
from accounts.people import (
    DIRECTORY_USERNAME_PREFIX,
    display_name_of,
    people_by_id,
    people_display_names,
    people_of,
    person_upsert,
)
from accounts.roles import membership_set_role
from accounts.tokens import agent_add, token_issue, token_restrict, token_revoke, token_set_directory
from memories.models import Channel
from memories.places import PlaceConflict, PlaceRecord, member_labels, place_put, place_records, record_of
from web.forms import AgentForm, InviteForm, PersonForm, PlaceForm, RemoveForm, RestrictForm, RoleForm
from web.pages import Account, RefusedInputIs400, account_of, errors_onto, one_or_404
from web.selectors import (
    UNKNOWN_PERSON,
    account_changes_shown,
    agents_with_tokens,
    member_names,
    place_changes,
)

ERASE_ENDPOINT = "POST /api/v1/subjects/user/{id}/erase"


def owner_page(*methods: str):
    """An owners' page: signed in, an owner (else 403), one of `methods` (any when none is named).

    The view is called with the owner's `Account` after the request.
    """

    def decorate(view):
        @functools.wraps(view)
        def page(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            account = account_of(request)
            if not account.viewer.is_owner:
                raise PermissionDenied("These pages are for your organisation's owners.")
            return view(request, account, *args, **kwargs)

        checked = require_http_methods(list(methods))(page) if methods else page
        return login_required(checked)

    return decorate


def _form_page(request: HttpRequest, template: str, form, **context) -> HttpResponse:
    """A page with a form: 400 when it is shown again because a POST was refused."""
    status = 400 if request.method == "POST" and form.errors else 200
    return render(request, f"web/owners/{template}", {**context, "form": form}, status=status)


def _posted(request: HttpRequest):
    """The POST's data, empty or not, so an empty POST is refused like any other bad input."""
    return request.POST if request.method == "POST" else None


def _no_store(response: HttpResponse) -> HttpResponse:
    """A page holding a secret shown once: never kept by the browser or a proxy."""
    response["Cache-Control"] = "no-store"
    return response


# --- People ------------------------------------------------------------------------------------------


def _person_or_404(account: Account, person_id) -> Membership:
    people = Membership.objects.select_related("user", "organisation")
    return one_or_404(
        people.filter(organisation=account.organisation, user_id=person_id),
        "No person of your organisation has this id.",
    )


def can_sign_in(membership: Membership) -> bool:
    return membership.user.is_active and membership.user.has_usable_password()


def shown_username(membership: Membership) -> str:
    """A directory person's generated username is never shown."""
    username = membership.user.username
    return "" if username.startswith(DIRECTORY_USERNAME_PREFIX) else username


def _people_page(request: HttpRequest, account: Account, form: PersonForm) -> HttpResponse:
    people = [
        {
            "membership": membership,
            "username": shown_username(membership),
            "can_sign_in": can_sign_in(membership),
            "invitable": person_invitable(membership),
            "is_you": membership.user_id == account.user.pk,
        }
        for membership in people_of(organisation=account.organisation)
    ]
    return _form_page(
        request,
        "people.html",
        form,
        section="people",
        people=people,
        organisation=account.organisation,
        changes=account_changes_shown(organisation=account.organisation),
    )


@owner_page("GET", "POST")
def people_list(request: HttpRequest, account: Account) -> HttpResponse:
    form = PersonForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            membership, created = person_upsert(
                organisation=account.organisation,
                handle=form.cleaned_data["handle"],
                display_name=form.cleaned_data["display_name"],
                actor=account.user,
            )
        except ValidationError as error:
            errors_onto(form, error, default_field="handle")
        else:
            verb = "Added" if created else "Updated"
            messages.success(request, f"{verb} {display_name_of(membership)}.")
            return redirect("web:people")
    return _people_page(request, account, form)


def _not_invitable(request: HttpRequest, membership: Membership) -> HttpResponse:
    # Inviting would set their password through a link only the owner sees: a way into their account.
    messages.error(request, AccountIsTheirs(display_name_of(membership)).message)
    return redirect("web:people")


@owner_page("GET", "POST")
def person_invite_page(request: HttpRequest, account: Account, person_id) -> HttpResponse:
    membership = _person_or_404(account, person_id)
    if not person_invitable(membership):
        return _not_invitable(request, membership)
    form = InviteForm(_posted(request), initial={"username": shown_username(membership)})
    if request.method == "POST" and form.is_valid():
        try:
            uidb64, token = person_invite(
                membership=membership, username=form.cleaned_data["username"], actor=account.user
            )
        except AccountIsTheirs:
            return _not_invitable(request, membership)
        except ValidationError as error:
            errors_onto(form, error, default_field="username")
        else:
            link = request.build_absolute_uri(reverse("web:password-set", args=[uidb64, token]))
            context = {
                "section": "people",
                "person": membership,
                "person_name": display_name_of(membership),
                "link": link,
            }
            return _no_store(render(request, "web/owners/person_invited.html", context))
    return _form_page(
        request,
        "person_invite.html",
        form,
        section="people",
        person=membership,
        person_name=display_name_of(membership),
    )


def _person_change_page(request: HttpRequest, membership: Membership, form, *, change, done, field: str, **page):
    """A person's change form: on a valid POST `change(cleaned_data)`, then back to the people with `done`'s
    message; else the form again (400 when refused)."""
    if request.method == "POST" and form.is_valid():
        try:
            change(form.cleaned_data)
        except ValidationError as error:
            errors_onto(form, error, default_field=field)
        else:
            messages.success(request, done(form.cleaned_data))
            return redirect("web:people")
    name = display_name_of(membership)
    return _form_page(
        request, page.pop("template"), form, section="people", person=membership, person_name=name, **page
    )


@owner_page("GET", "POST")
def person_remove_page(request: HttpRequest, account: Account, person_id) -> HttpResponse:
    membership = _person_or_404(account, person_id)
    return _person_change_page(
        request,
        membership,
        RemoveForm(_posted(request)),
        change=lambda _: person_remove(membership=membership, actor=account.user),
        done=lambda _: f"Removed {display_name_of(membership)}: they can no longer sign in.",
        field="confirm",
        template="person_remove.html",
        is_you=membership.user_id == account.user.pk,
        erase_endpoint=ERASE_ENDPOINT.format(id=membership.user_id),
    )


@owner_page("POST")
def person_restore_page(request: HttpRequest, account: Account, person_id) -> HttpResponse:
    membership = _person_or_404(account, person_id)
    person_restore(membership=membership, actor=account.user)
    messages.success(request, f"Restored {display_name_of(membership)}: they sign in again with their own password.")
    return redirect("web:people")


@owner_page("GET", "POST")
def person_role_page(request: HttpRequest, account: Account, person_id) -> HttpResponse:
    membership = _person_or_404(account, person_id)
    return _person_change_page(
        request,
        membership,
        RoleForm(_posted(request), initial={"role": membership.role}),
        change=lambda data: membership_set_role(membership=membership, role=data["role"], actor=account.user),
        done=lambda data: f"{display_name_of(membership)} is now {data['role']}.",
        field="role",
        template="person_role.html",
    )


class PasswordSetView(RefusedInputIs400, PasswordResetConfirmView):
    """The invitation link: choose a password. Django's reset token stops working once one is set."""

    template_name = "registration/password_set_confirm.html"
    success_url = reverse_lazy("web:password-set-done")

    def get_user(self, uidb64):
        # A removed person's link stops working: removing keeps the password, which the token is made from.
        user = super().get_user(uidb64)
        return user if user is not None and user.is_active else None


# --- Places ------------------------------------------------------------------------------------------


def _place_or_404(account: Account, place_id):
    rows = place_records(organisation=account.organisation).filter(pk=place_id)
    return record_of(one_or_404(rows, "No place of your organisation has this id."))


def _place_saved(account: Account, form: PlaceForm, channel: str) -> tuple[PlaceRecord | None, int]:
    """The place recorded as the form says with 200, or None with the service's refusal shown on the form and
    its status: 409 for a change a place's record never takes (a DM's person or kind), else 400."""
    try:
        record, _ = place_put(
            organisation=account.organisation,
            channel=channel,
            kind=form.cleaned_data["kind"],
            people=form.cleaned_data["people"],
            actor=account.user,
        )
    except PlaceConflict as error:
        form.add_error(error.field if error.field in form.fields else None, error.message)
        return None, error.http_status
    except ValidationError as error:
        errors_onto(form, error, default_field="people")
        return None, 400
    return record, 200


@owner_page("GET", "POST")
def place_list(request: HttpRequest, account: Account) -> HttpResponse:
    form = PlaceForm(_posted(request), initial={"kind": Channel.Kind.PRIVATE})
    if request.method == "POST" and form.is_valid():
        channel = form.cleaned_data["channel"]
        if Channel.objects.filter(organisation=account.organisation, external_id=channel).exists():
            form.add_error("channel", "A place with this channel id is recorded; change it from its own page.")
        elif (record := _place_saved(account, form, channel)[0]) is not None:
            messages.success(request, f"Recorded {channel}.")
            return redirect("web:place-detail", record.channel.pk)
    names = people_display_names(organisation=account.organisation)
    places = [
        {"record": record, "people": member_names(record, names)}
        for record in map(record_of, place_records(organisation=account.organisation).order_by("external_id"))
    ]
    return _form_page(request, "places.html", form, section="places", places=places)


@owner_page("GET", "POST")
def place_detail(request: HttpRequest, account: Account, place_id) -> HttpResponse:
    record = _place_or_404(account, place_id)
    initial = {"kind": record.channel.kind, "people": "\n".join(member_labels(record))}
    form = PlaceForm(_posted(request), new=False, initial=initial)
    channel = record.channel
    status = 200
    if request.method == "POST" and form.is_valid():
        saved, status = _place_saved(account, form, channel.external_id)
        if saved is not None:
            messages.success(request, f"Saved {channel.external_id}. The change is in its audit below.")
            return redirect("web:place-detail", channel.pk)
    response = _form_page(
        request,
        "place_detail.html",
        form,
        section="places",
        record=record,
        people=member_names(record, people_display_names(organisation=account.organisation, ids=record.member_ids)),
        changes=place_changes(organisation=account.organisation, channel=record.channel),
    )
    if status != 200:
        response.status_code = status
    return response


# --- Agents and tokens -------------------------------------------------------------------------------


RESTRICT_FIELDS = {"allowed_channels": "channels", "allowed_people": "people"}


def _token_or_404(account: Account, token_id) -> AgentToken:
    tokens = AgentToken.objects.select_related("agent", "organisation")
    return one_or_404(
        tokens.filter(organisation=account.organisation, pk=token_id), "No token of your organisation has this id."
    )


def _token_shown_once(request: HttpRequest, token: AgentToken, raw: str) -> HttpResponse:
    context = {"section": "agents", "token": token, "raw": raw}
    return _no_store(render(request, "web/owners/token_created.html", context))


@owner_page("GET", "POST")
def agent_list(request: HttpRequest, account: Account) -> HttpResponse:
    form = AgentForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            _, token, raw = agent_add(
                organisation=account.organisation, name=form.cleaned_data["name"], actor=account.user
            )
        except ValidationError as error:
            errors_onto(form, error, default_field="name")
        else:
            return _token_shown_once(request, token, raw)
    agents = agents_with_tokens(organisation=account.organisation)
    return _form_page(request, "agents.html", form, section="agents", agents=agents)


@owner_page("POST")
def token_create(request: HttpRequest, account: Account, agent_id) -> HttpResponse:
    agent = one_or_404(account.organisation.agents.filter(pk=agent_id), "No agent of your organisation has this id.")
    token, raw = token_issue(agent=agent, actor=account.user)
    return _token_shown_once(request, token, raw)


def _token_page(request: HttpRequest, account: Account, token: AgentToken, form: RestrictForm, status: int = 200):
    names = people_display_names(organisation=account.organisation, ids=token.allowed_people)
    context = {
        "section": "agents",
        "token": token,
        "form": form,
        "allowed_people": [names.get(str(person_id), UNKNOWN_PERSON) for person_id in token.allowed_people],
    }
    return render(request, "web/owners/token_detail.html", context, status=status)


@owner_page()
@never_cache
def token_detail(request: HttpRequest, account: Account, token_id) -> HttpResponse:
    token = _token_or_404(account, token_id)
    people = people_by_id(organisation=account.organisation, ids=token.allowed_people)
    initial = {
        "restricted": token.restricted,
        "channels": "\n".join(token.allowed_channels),
        # The form takes handles or usernames, so it is filled with them, not with display names.
        "people": "\n".join(
            people[str(person_id)].label for person_id in token.allowed_people if str(person_id) in people
        ),
    }
    return _token_page(request, account, token, RestrictForm(initial=initial))


@owner_page("POST")
def token_restrict_page(request: HttpRequest, account: Account, token_id) -> HttpResponse:
    token = _token_or_404(account, token_id)
    form = RestrictForm(request.POST)
    if form.is_valid():
        try:
            token_restrict(
                token=token,
                restricted=form.cleaned_data["restricted"],
                channels=form.cleaned_data["channels"],
                people=form.cleaned_data["people"],
                actor=account.user,
            )
        except ValidationError as error:
            # The service names the token's fields; the form shows them beside its own.
            for name, problems in error.message_dict.items():
                form.add_error(RESTRICT_FIELDS.get(name), problems)
        else:
            messages.success(request, "Restricted." if form.cleaned_data["restricted"] else "Not restricted.")
            return redirect("web:token-detail", token.pk)
    return _token_page(request, account, token, form, status=400)


@owner_page("POST")
def token_directory(request: HttpRequest, account: Account, token_id) -> HttpResponse:
    token = _token_or_404(account, token_id)
    give = request.POST.get("directory")
    if give not in ("give", "take"):
        return _token_page(request, account, token, RestrictForm(), status=400)
    token_set_directory(token=token, directory=give == "give", actor=account.user)
    said = "The directory right is given back." if give == "give" else "The directory right is taken."
    messages.success(request, said)
    return redirect("web:token-detail", token.pk)


@owner_page("POST")
def token_revoke_page(request: HttpRequest, account: Account, token_id) -> HttpResponse:
    token = _token_or_404(account, token_id)
    token_revoke(token=token, actor=account.user)
    messages.success(request, "Revoked: every call with this token is now refused.")
    return redirect("web:token-detail", token.pk)


# --- The organisation's switches --------------------------------------------------------------------

EPISODES_CHOICES = ("on", "off")


@owner_page("GET", "POST")
def organisation_page(request: HttpRequest, account: Account) -> HttpResponse:
    """Whether the organisation's threads keep episodes; an owner turns it on or off (audited with who)."""
    refused = ""
    if request.method == "POST":
        wanted = request.POST.get("episodes")
        if wanted in EPISODES_CHOICES:
            organisation_set_thread_episodes(organisation=account.organisation, keep=wanted == "on", actor=account.user)
            messages.success(request, f"Episodes are {wanted} for this organisation's threads.")
            return redirect("web:organisation")
        refused = f"episodes: {wanted!r} is not one of {', '.join(EPISODES_CHOICES)}."
    context = {"section": "organisation", "organisation": account.organisation, "refused": refused}
    return render(request, "web/owners/organisation.html", context, status=400 if refused else 200)
