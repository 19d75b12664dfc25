"""Every form needs its CSRF token, and bad input is refused by field, with nothing written."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from memories.models import Memory


def test_every_form_is_refused_without_its_csrf_token(member, seeded):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    memory = seeded.forgettable
    posts = {
        reverse("web:memory-correct", args=[memory.pk]): {"body": "Changed"},
        reverse("web:memory-pin", args=[memory.pk]): {},
        reverse("web:memory-unpin", args=[memory.pk]): {},
        reverse("web:memory-forget", args=[memory.pk]): {"reason": "x"},
        reverse("web:about-me-erase"): {"confirm": "erase"},
        reverse("web:password-change"): {},
        reverse("web:logout"): {},
    }
    for url, data in posts.items():
        response = client.post(url, data)
        assert response.status_code == 403, url
        assert b"This form has expired" in response.content
    memory.refresh_from_db()
    assert memory.body == "Is training for the Leeds half marathon" and memory.redacted_at is None
    assert memory.superseded_by_id is None


def test_every_form_on_the_pages_carries_a_csrf_token(client, member, seeded):
    client.force_login(member)
    memory = seeded.forgettable
    for url in (
        reverse("web:memory-detail", args=[memory.pk]),
        reverse("web:memory-correct", args=[memory.pk]),
        reverse("web:memory-forget", args=[memory.pk]),
        reverse("web:about-me"),
        reverse("web:password-change"),
    ):
        page = client.get(url).content.decode()
        assert page.count('method="post"') == page.count('name="csrfmiddlewaretoken"'), url


def test_a_correction_over_the_limit_is_refused_naming_the_limit(client, member, seeded):
    client.force_login(member)
    memory = seeded.forgettable
    response = client.post(reverse("web:memory-correct", args=[memory.pk]), {"body": "x" * 2001})
    assert response.status_code == 400
    assert "at most 2000 characters" in response.content.decode()
    assert Memory.objects.count() == 7


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("", "This field is required."),
        ("Is training for the Leeds half marathon", "the same as the memory"),
        ("Bad\x00byte", "Null characters are not allowed."),
        ("Bell\x07here", "control characters"),
    ],
)
def test_a_correction_that_breaks_a_rule_is_refused_on_its_field(client, member, seeded, body, message):
    client.force_login(member)
    response = client.post(reverse("web:memory-correct", args=[seeded.forgettable.pk]), {"body": body})
    assert response.status_code == 400
    assert message in response.content.decode()
    seeded.forgettable.refresh_from_db()
    assert seeded.forgettable.superseded_by_id is None


def test_asking_to_forget_erases_nothing_until_confirmed(client, member, seeded):
    client.force_login(member)
    response = client.get(reverse("web:memory-forget", args=[seeded.forgettable.pk]))
    assert response.status_code == 200 and b"Forget this memory?" in response.content
    response = client.post(reverse("web:memory-forget", args=[seeded.forgettable.pk]), {"reason": ""})
    assert response.status_code == 400
    seeded.forgettable.refresh_from_db()
    assert seeded.forgettable.redacted_at is None


def test_erasing_everything_needs_the_word(client, member, seeded):
    client.force_login(member)
    response = client.post(reverse("web:about-me-erase"), {"confirm": "yes please"})
    assert response.status_code == 400
    assert "Type the word &quot;erase&quot; to confirm; nothing was erased." in response.content.decode()
    assert not Memory.objects.filter(redacted_at__isnull=False).exists()


def test_an_unknown_filter_value_is_refused_by_name(client, member, seeded):
    client.force_login(member)
    response = client.get(reverse("web:memory-list"), {"bucket": "secret", "q": "x" * 201})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Select a valid choice. secret is not one of the available choices." in page
    assert "at most 200 characters" in page
