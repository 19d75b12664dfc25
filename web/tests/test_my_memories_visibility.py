"""What a person sees on "My memories" and a memory's page follows the scope rules."""

from __future__ import annotations

from django.urls import reverse


def bodies_listed(client) -> str:
    response = client.get(reverse("web:memory-list"))
    assert response.status_code == 200
    return response.content.decode()


def test_pages_ask_for_a_login_first(client, seeded):
    for url in (reverse("web:memory-list"), reverse("web:memory-detail", args=[seeded.workspace.pk])):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("web:login"))


def test_a_person_sees_workspace_their_channels_and_their_own_facts(client, member, seeded):
    client.force_login(member)
    page = bodies_listed(client)
    for memory in (seeded.person_fact, seeded.forgettable, seeded.workspace, seeded.channel):
        assert memory.body in page
    assert seeded.other_channel.body not in page
    assert seeded.others_fact.body not in page


def test_another_persons_facts_are_not_shown_even_to_an_owner(client, owner, second_member, seeded):
    client.force_login(owner)
    assert seeded.person_fact.body not in bodies_listed(client)
    response = client.get(reverse("web:memory-detail", args=[seeded.person_fact.pk]))
    assert response.status_code == 404

    client.force_login(second_member)
    page = bodies_listed(client)
    assert seeded.others_fact.body in page and seeded.person_fact.body not in page
    assert client.get(reverse("web:memory-detail", args=[seeded.person_fact.pk])).status_code == 404


def test_a_channel_fact_is_hidden_from_people_outside_the_channel(client, member, seeded):
    client.force_login(member)
    response = client.get(reverse("web:memory-detail", args=[seeded.other_channel.pk]))
    assert response.status_code == 404


def test_another_organisations_memory_answers_404(client, outsider, seeded):
    client.force_login(outsider)
    assert seeded.workspace.body not in bodies_listed(client)
    assert client.get(reverse("web:memory-detail", args=[seeded.workspace.pk])).status_code == 404


def test_the_empty_state_says_what_a_memory_is(client, outsider):
    client.force_login(outsider)
    page = bodies_listed(client)
    assert "Nothing is remembered yet" in page
    assert "short fact an agent keeps between conversations" in page
