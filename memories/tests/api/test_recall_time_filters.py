"""Time as data: a fact's `occurred_at`, recall's time filters, and the date render shows."""

from __future__ import annotations

from memories.models import Memory
from memories.tests.api.helpers import recall, remember, render


def bodies(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["body"] for row in response.json()["results"]]


def test_remember_keeps_when_the_fact_happened(agent_api, general):
    response = remember(agent_api, general, "The team offsite was in Porto", occurred_at="2023-05-08T13:56:00Z")
    assert response.status_code == 201, response.content
    assert response.json()["occurred_at"] == "2023-05-08T13:56:00Z"
    memory = Memory.objects.get(pk=response.json()["id"])
    assert memory.occurred_at.isoformat() == "2023-05-08T13:56:00+00:00"
    assert memory.created_at.year > 2023


def test_a_malformed_occurred_at_is_refused_by_name_and_nothing_is_written(agent_api, general):
    response = remember(agent_api, general, "Offsite in Porto", occurred_at="last Tuesday")
    assert response.status_code == 400
    assert "occurred_at" in response.json()["fields"]
    assert not Memory.objects.filter(body="Offsite in Porto").exists()


def test_recall_keeps_only_facts_that_happened_in_the_interval(agent_api, general):
    remember(agent_api, general, "Offsite in Porto", occurred_at="2023-05-08T10:00:00Z")
    remember(agent_api, general, "Offsite in Lisbon", occurred_at="2023-09-01T10:00:00Z")
    remember(agent_api, general, "Offsite in Leeds")  # happened when it was written: now
    found = bodies(
        recall(
            agent_api, general, "offsite", occurred_after="2023-05-01T00:00:00Z", occurred_before="2023-06-01T00:00:00Z"
        )
    )
    assert found == ["Offsite in Porto"]
    assert sorted(bodies(recall(agent_api, general, "offsite", occurred_after="2023-06-01T00:00:00Z"))) == [
        "Offsite in Leeds",
        "Offsite in Lisbon",
    ]
    assert sorted(bodies(recall(agent_api, general, "offsite", occurred_before="2024-01-01T00:00:00Z"))) == [
        "Offsite in Lisbon",
        "Offsite in Porto",
    ]


def test_time_filters_apply_to_every_mode_and_to_pinned_facts(agent_api, general):
    remember(agent_api, general, "Offsite in Porto", occurred_at="2023-05-08T10:00:00Z", pinned=True)
    remember(agent_api, general, "Offsite in Lisbon", occurred_at="2023-09-01T10:00:00Z")
    for mode in ("auto", "lexical", "recent", "contextual"):
        found = bodies(recall(agent_api, general, "offsite", mode=mode, occurred_after="2023-06-01T00:00:00Z"))
        assert found == ["Offsite in Lisbon"], mode


def test_an_empty_or_reversed_interval_is_refused_by_name(agent_api, general):
    for after, before in (("2023-06-01T00:00:00Z", "2023-05-01T00:00:00Z"), ("2023-06-01T00:00:00Z",) * 2):
        response = recall(agent_api, general, "offsite", occurred_after=after, occurred_before=before)
        assert response.status_code == 400
        assert response.json()["fields"] == {"occurred_before": ["occurred_before must be later than occurred_after."]}
    response = recall(agent_api, general, "offsite", occurred_after="soon")
    assert response.status_code == 400 and "occurred_after" in response.json()["fields"]


def test_render_dates_a_fact_by_when_it_happened(agent_api, general):
    remember(agent_api, general, "Offsite in Porto", occurred_at="2023-05-08T10:00:00Z")
    response = render(agent_api, general, "turn-time-1", question="offsite")
    assert response.status_code == 200, response.content
    line = next(line for line in response.json()["text"].splitlines() if "Offsite in Porto" in line)
    assert "2023-05-08" in line
