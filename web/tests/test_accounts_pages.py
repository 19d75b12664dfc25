"""Logging in, logging out and changing one's password."""

from __future__ import annotations

from django.urls import reverse


def test_a_person_logs_in_and_lands_on_their_memories(client, member):
    response = client.post(reverse("web:login"), {"username": "mona", "password": "pw-mona-123"})
    assert response.status_code == 302 and response["Location"] == reverse("web:memory-list")
    assert client.get(reverse("web:memory-list")).status_code == 200


def test_a_wrong_password_is_refused_without_saying_which_part_was_wrong(client, member):
    response = client.post(reverse("web:login"), {"username": "mona", "password": "nope"})
    assert response.status_code == 400
    assert "Please enter a correct username and password." in response.content.decode()
    assert client.get(reverse("web:memory-list")).status_code == 302


def test_the_login_page_returns_to_where_the_person_was_going(client, member, make_memory):
    memory = make_memory()
    target = reverse("web:memory-detail", args=[memory.pk])
    response = client.post(
        reverse("web:login") + f"?next={target}", {"username": "mona", "password": "pw-mona-123", "next": target}
    )
    assert response["Location"] == target


def test_the_login_page_never_redirects_off_site(client, member):
    response = client.post(
        reverse("web:login"), {"username": "mona", "password": "pw-mona-123", "next": "https://evil.example/"}
    )
    assert response["Location"] == reverse("web:memory-list")


def test_logging_out_is_a_post_and_ends_the_session(client, member):
    client.force_login(member)
    assert client.get(reverse("web:logout")).status_code == 405
    response = client.post(reverse("web:logout"))
    assert response["Location"] == reverse("web:login")
    assert client.get(reverse("web:memory-list")).status_code == 302


def test_a_person_changes_their_password(client, member):
    client.force_login(member)
    response = client.post(
        reverse("web:password-change"),
        {
            "old_password": "pw-mona-123",
            "new_password1": "a-new-long-passphrase",
            "new_password2": "a-new-long-passphrase",
        },
    )
    assert response["Location"] == reverse("web:password-change-done")
    member.refresh_from_db()
    assert member.check_password("a-new-long-passphrase")


def test_a_wrong_old_password_changes_nothing(client, member):
    client.force_login(member)
    response = client.post(
        reverse("web:password-change"),
        {"old_password": "wrong", "new_password1": "a-new-long-passphrase", "new_password2": "a-new-long-passphrase"},
    )
    assert response.status_code == 400
    assert "Your old password was entered incorrectly" in response.content.decode()
    member.refresh_from_db()
    assert member.check_password("pw-mona-123")


def test_an_account_without_an_organisation_is_refused(client, django_user_model):
    loner = django_user_model.objects.create_user(username="loner", password="pw-loner-123")
    client.force_login(loner)
    response = client.get(reverse("web:memory-list"))
    assert response.status_code == 403
    assert "This account belongs to no organisation." in response.content.decode()
