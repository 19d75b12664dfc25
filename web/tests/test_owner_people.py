"""Owners add directory people, invite them with a link shown once, and remove them."""

from __future__ import annotations

import re

from django.urls import reverse

from accounts.models import Membership, User
from accounts.people import person_upsert


def invite(client, person_id, username: str) -> str:
    """The invitation link the owner is shown, as a path."""
    response = client.post(reverse("web:person-invite", args=[person_id]), {"username": username})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    link = re.search(r'<code id="invite-link">([^<]+)</code>', response.content.decode()).group(1)
    return link.removeprefix("http://testserver")


def test_an_owner_adds_a_directory_person_and_updates_their_name(client, owner, org):
    client.force_login(owner)
    response = client.post(reverse("web:people"), {"handle": "U42", "display_name": "Ula"})
    assert response["Location"] == reverse("web:people")
    membership = Membership.objects.get(organisation=org, handle="U42")
    assert membership.directory and not membership.user.has_usable_password()

    client.post(reverse("web:people"), {"handle": "U42", "display_name": "Ula Lind"})
    page = client.get(reverse("web:people")).content.decode()
    assert "Ula Lind" in page and Membership.objects.filter(handle="U42").count() == 1
    assert membership.user.username not in page  # the generated username is never shown
    assert "not invited" in page


def test_a_bad_handle_or_a_taken_name_is_refused_by_field(client, owner, member):
    client.force_login(owner)
    response = client.post(reverse("web:people"), {"handle": "has space", "display_name": ""})
    assert response.status_code == 400 and "A handle is 1 to 150 characters" in response.content.decode()
    response = client.post(reverse("web:people"), {"handle": "mona", "display_name": ""})
    assert response.status_code == 400 and "already names another person" in response.content.decode()
    assert not Membership.objects.filter(handle__isnull=False).exists()


def test_the_invitation_link_is_shown_once_and_sets_a_password_once(client, owner, org):
    person, _ = person_upsert(organisation=org, handle="U42", display_name="Ula")
    client.force_login(owner)
    link = invite(client, person.user_id, "ula")
    assert link not in client.get(reverse("web:people")).content.decode()
    person.refresh_from_db()
    assert not person.directory and person.user.username == "ula"

    client.logout()
    response = client.get(link)
    assert response.status_code == 302  # Django swaps the token for a session key, off the address bar
    form_url = response["Location"]
    assert "Choose your password" in client.get(form_url).content.decode()
    response = client.post(form_url, {"new_password1": "ula-long-passphrase", "new_password2": "ula-different"})
    assert response.status_code == 400
    response = client.post(form_url, {"new_password1": "ula-long-passphrase", "new_password2": "ula-long-passphrase"})
    assert response["Location"] == reverse("web:password-set-done")
    assert User.objects.get(pk=person.user_id).check_password("ula-long-passphrase")

    again = client.get(link, follow=True).content.decode()
    assert "This link no longer works" in again and "Choose your password" not in again
    assert client.login(username="ula", password="ula-long-passphrase")


def test_an_invitation_is_made_once_a_second_is_refused(client, owner, org):
    person, _ = person_upsert(organisation=org, handle="U42", display_name="Ula")
    client.force_login(owner)
    first = invite(client, person.user_id, "ula")
    response = client.post(reverse("web:person-invite", args=[person.user_id]), {"username": "ula2"})
    assert response["Location"] == reverse("web:people")
    assert "already has an account" in client.get(reverse("web:people")).content.decode()
    client.logout()
    assert "Choose your password" in client.get(first, follow=True).content.decode()  # the first link still works


def test_someone_who_already_signs_in_is_not_invited(client, owner, member):
    client.force_login(owner)
    response = client.post(reverse("web:person-invite", args=[member.pk]), {"username": "mona"})
    assert response["Location"] == reverse("web:people")
    member.refresh_from_db()
    assert member.check_password("pw-mona-123")


def test_an_invitation_needs_a_free_username(client, owner, org, member):
    person, _ = person_upsert(organisation=org, handle="U42", display_name="Ula")
    client.force_login(owner)
    for username, problem in (("mona", "already names another person"), ("~sneaky", "cannot start with")):
        response = client.post(reverse("web:person-invite", args=[person.user_id]), {"username": username})
        assert response.status_code == 400 and problem in response.content.decode()
    person.refresh_from_db()
    assert person.directory


def test_removing_a_person_deactivates_them_and_says_erasure_is_separate(client, owner, member, make_memory):
    memory = make_memory()
    client.force_login(owner)
    page = client.get(reverse("web:person-remove", args=[member.pk])).content.decode()
    assert "Erasing what is held about them is a separate request" in page
    assert f"POST /api/v1/subjects/user/{member.pk}/erase" in page

    assert client.post(reverse("web:person-remove", args=[member.pk]), {}).status_code == 400
    response = client.post(reverse("web:person-remove", args=[member.pk]), {"confirm": "on"})
    assert response["Location"] == reverse("web:people")
    member.refresh_from_db()
    assert not member.is_active and member.check_password("pw-mona-123")  # removing keeps their password
    memory.refresh_from_db()
    assert memory.redacted_at is None and memory.body  # removing erases nothing

    client.logout()
    assert not client.login(username="mona", password="pw-mona-123")


def test_an_owner_cannot_remove_themself(client, owner):
    client.force_login(owner)
    response = client.post(reverse("web:person-remove", args=[owner.pk]), {"confirm": "on"})
    assert response.status_code == 400
    owner.refresh_from_db()
    assert owner.is_active
