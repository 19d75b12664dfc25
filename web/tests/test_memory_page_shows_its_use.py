"""A memory's page says how often agents were given it: "Used in N turns, last on …", from the injection records."""

from __future__ import annotations

from django.urls import reverse


def render_turn(client, token: str, turn_id: str, people: list[str]) -> None:
    channel = f"dm-{people[0]}"  # each DM is its own place, bound to its one person
    response = client.post(
        "/api/v1/render",
        {"place": {"channel": channel, "kind": "dm", "people": people}, "turn_id": turn_id},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content


def test_the_page_counts_the_turns_a_memory_was_given_in(client, member, agent_with_token, seeded):
    _, token = agent_with_token
    render_turn(client, token, "turn-0001", ["mona"])
    render_turn(client, token, "turn-0002", ["mona"])
    render_turn(client, token, "turn-0003", ["max"])  # a DM with someone else: mona's facts stay out

    client.force_login(member)
    page = client.get(reverse("web:memory-detail", args=[seeded.person_fact.pk])).content.decode()
    assert "Used in 2 turns, last on" in page
    assert "turn-0001" in page and "turn-0002" in page and "turn-0003" not in page
    assert page.index("turn-0002") < page.index("turn-0001")  # newest first

    page = client.get(reverse("web:memory-detail", args=[seeded.workspace.pk])).content.decode()
    assert "Used in 3 turns, last on" in page


def test_a_memory_never_injected_says_so(client, member, seeded):
    client.force_login(member)
    page = client.get(reverse("web:memory-detail", args=[seeded.channel.pk])).content.decode()
    assert "Not yet given to an agent in any turn." in page
