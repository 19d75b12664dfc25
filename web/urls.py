"""Routes for the account holders' pages: /accounts/ for signing in, /me/ for what is kept about you."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, path, reverse_lazy
from django.views import View
from django.views.generic import RedirectView

from web import owners, views
from web.forms import LoginForm

app_name = "web"


def account_page(route: str, view: type[View[Any]], name: str, **options) -> URLPattern:
    """The page `view` at `route`, marked as the navigation's "account" section."""
    return path(route, view.as_view(extra_context={"section": "account"}, **options), name=name)


urlpatterns = [
    path("", RedirectView.as_view(pattern_name="web:memory-list", permanent=False), name="home"),
    path(
        "accounts/login/",
        views.LoginView.as_view(
            template_name="web/login.html", authentication_form=LoginForm, redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page=reverse_lazy("web:login")), name="logout"),
    account_page(
        "accounts/password/",
        views.PasswordChangeView,
        "password-change",
        template_name="web/password_change.html",
        success_url=reverse_lazy("web:password-change-done"),
    ),
    account_page(
        "accounts/password/done/",
        auth_views.PasswordChangeDoneView,
        "password-change-done",
        template_name="web/password_change_done.html",
    ),
    account_page("accounts/welcome/<uidb64>/<token>/", owners.PasswordSetView, "password-set"),
    account_page(
        "accounts/welcome/done/",
        auth_views.PasswordResetCompleteView,
        "password-set-done",
        template_name="registration/password_set_complete.html",
    ),
    path("me/memories", views.memory_list, name="memory-list"),
    path("me/memories/<uuid:memory_id>", views.memory_detail, name="memory-detail"),
    path("me/memories/<uuid:memory_id>/correct", views.memory_correct, name="memory-correct"),
    path("me/memories/<uuid:memory_id>/pin", views.memory_pin_page, name="memory-pin"),
    path("me/memories/<uuid:memory_id>/unpin", views.memory_unpin_page, name="memory-unpin"),
    path("me/memories/<uuid:memory_id>/forget", views.memory_forget_page, name="memory-forget"),
    path("me/memories/<uuid:memory_id>/receipt", views.memory_receipt, name="memory-receipt"),
    path("me/conflicts", views.conflict_list, name="conflict-list"),
    path("me/conflicts/<int:learning_id>/accept", views.conflict_accept_view, name="conflict-accept"),
    path("me/conflicts/<int:learning_id>/dismiss", views.conflict_dismiss_view, name="conflict-dismiss"),
    path("me/everything", views.about_me, name="about-me"),
    path("me/everything.json", views.about_me_export, name="about-me-export"),
    path("me/everything/erase", views.about_me_erase, name="about-me-erase"),
    path("me/everything/erased", views.about_me_erased, name="about-me-erased"),
    path("me/places", views.my_places, name="my-places"),
    # The owners' pages: their organisation's people, places and agents.
    path("owners/people", owners.people_list, name="people"),
    path("owners/people/<uuid:person_id>/invite", owners.person_invite_page, name="person-invite"),
    path("owners/people/<uuid:person_id>/remove", owners.person_remove_page, name="person-remove"),
    path("owners/people/<uuid:person_id>/restore", owners.person_restore_page, name="person-restore"),
    path("owners/people/<uuid:person_id>/role", owners.person_role_page, name="person-role"),
    path("owners/places", owners.place_list, name="places"),
    path("owners/places/<int:place_id>", owners.place_detail, name="place-detail"),
    path("owners/agents", owners.agent_list, name="agents"),
    path("owners/organisation", owners.organisation_page, name="organisation"),
    path("owners/agents/<uuid:agent_id>/tokens", owners.token_create, name="token-create"),
    path("owners/tokens/<uuid:token_id>", owners.token_detail, name="token-detail"),
    path("owners/tokens/<uuid:token_id>/restrict", owners.token_restrict_page, name="token-restrict"),
    path("owners/tokens/<uuid:token_id>/directory", owners.token_directory, name="token-directory"),
    path("owners/tokens/<uuid:token_id>/revoke", owners.token_revoke_page, name="token-revoke"),
]
