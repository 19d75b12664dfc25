"""The owners' pages answer only an owner, and only about their own organisation."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import AgentToken
from accounts.people import person_upsert
from memories.places import place_put


@pytest.fixture
def records(org, owner, member, agent):
    """A directory person, a private place and a token of `org`."""
    person, _ = person_upsert(organisation=org, handle="U42", display_name="Ula Directory")
    record, _ = place_put(organisation=org, channel="C-secret", kind="private", people=["mona"], actor=owner)
    token = AgentToken.objects.get(agent=agent)
    return {"person": person.user_id, "place": record.channel.pk, "token": token.pk, "agent": agent.pk}


def urls(records) -> list[tuple[str, str]]:
    return [
        ("get", reverse("web:people")),
        ("get", reverse("web:person-invite", args=[records["person"]])),
        ("get", reverse("web:person-remove", args=[records["person"]])),
        ("get", reverse("web:person-role", args=[records["person"]])),
        ("post", reverse("web:person-restore", args=[records["person"]])),
        ("get", reverse("web:places")),
        ("get", reverse("web:place-detail", args=[records["place"]])),
        ("get", reverse("web:agents")),
        ("post", reverse("web:token-create", args=[records["agent"]])),
        ("get", reverse("web:token-detail", args=[records["token"]])),
        ("post", reverse("web:token-restrict", args=[records["token"]])),
        ("post", reverse("web:token-directory", args=[records["token"]])),
        ("post", reverse("web:token-revoke", args=[records["token"]])),
    ]


def test_the_owners_pages_ask_for_a_login_first(client, records):
    for method, url in urls(records):
        response = getattr(client, method)(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("web:login")), url


def test_members_and_stewards_are_refused(client, member, steward, records):
    for person in (member, steward):
        client.force_login(person)
        for method, url in urls(records):
            assert getattr(client, method)(url, {"directory": "take"}).status_code == 403, url
    token = AgentToken.objects.get(pk=records["token"])
    assert token.revoked_at is None and token.directory and AgentToken.objects.count() == 1


def test_the_owner_of_this_organisation_is_let_in(client, owner, records):
    client.force_login(owner)
    for method, url in urls(records):
        if method == "get":
            assert client.get(url).status_code == 200, url


def test_an_owner_of_another_organisation_finds_none_of_this_ones_records(client, outsider, records):
    client.force_login(outsider)
    for method, url in urls(records):
        response = getattr(client, method)(url, {"directory": "take"})
        if url in (reverse("web:people"), reverse("web:places"), reverse("web:agents")):
            page = response.content.decode()
            assert response.status_code == 200
            assert "U42" not in page and "C-secret" not in page and "helper" not in page and "mona" not in page
        else:
            assert response.status_code == 404, url
    token = AgentToken.objects.get(pk=records["token"])
    assert token.revoked_at is None and token.directory and AgentToken.objects.count() == 1


def test_the_navigation_links_the_owners_pages_for_owners_only(client, owner, member):
    client.force_login(member)
    page = client.get(reverse("web:memory-list")).content.decode()
    assert reverse("web:my-places") in page
    assert reverse("web:people") not in page and reverse("web:agents") not in page
    client.force_login(owner)
    page = client.get(reverse("web:memory-list")).content.decode()
    for name in ("web:people", "web:places", "web:agents", "web:my-places"):
        assert reverse(name) in page
