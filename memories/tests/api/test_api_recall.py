"""POST /api/v1/recall: what the SQL leaves out, how it ranks, and what it says when it had to give way."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.utils import timezone

from memories.embeddings import embedders
from memories.models import Author, Bucket, Memory, SourceKind
from memories.services import memory_redact, memory_supersede
from memories.tests.api.helpers import recall, remember


def bodies(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["body"] for row in response.json()["results"]]


def system_claim(org, body: str, **extra) -> Memory:
    return Memory.objects.create(
        organisation=org,
        bucket=Bucket.SYSTEM,
        author=Author.MODEL,
        source_kind=SourceKind.RUN,
        body=body,
        slug="sys:tea",
        transparency="ledger",
        as_of=date(2026, 1, 1),
        admission="admitted",
        evidence_refs=[{"kind": "url", "ref": "https://example.com/tea"}],
        **extra,
    )


def test_recall_leaves_out_everything_it_must(agent_api, org, other_org, make_memory, member, agent, owner):
    make_memory(body="Tea is served at ten")
    make_memory(body="Tea in the general channel", scope="channel", scope_ref="C-general")
    make_memory(body="Tea in another channel", scope="channel", scope_ref="C-other")
    make_memory(
        body="Tea for mona only",
        scope="person",
        scope_ref=str(member.pk),
        subject_type="user",
        subject_id=str(member.pk),
    )
    make_memory(organisation=other_org, owner=None, written_by=None, body="Tea at Globex")
    erased = make_memory(body="Tea erased")
    memory_redact(memory=erased, reason="asked", actor=member)
    make_memory(body="Tea expired", expires_at=timezone.now() + timedelta(minutes=1))
    old = make_memory(body="Tea old version")
    memory_supersede(memory=old, body="Tea new version", actor=member)
    system_claim(org, "Tea is a system claim")
    system_claim(org, "Tea promoted to stance tea-policy", stance="tea-policy")
    # Written live, then its expiry passes: recall judges expiry at read time.
    Memory.objects.filter(body="Tea expired").update(expires_at=timezone.now() - timedelta(seconds=1))
    found = bodies(recall(agent_api, {"channel": "C-general", "kind": "public", "people": []}, "tea", limit=40))
    assert sorted(found) == ["Tea in the general channel", "Tea is served at ten", "Tea new version"]


def test_a_person_fact_is_recalled_only_in_a_dm_with_exactly_that_person(agent_api, make_memory, member, second_member):
    make_memory(
        body="Mona takes oat milk",
        scope="person",
        scope_ref=str(member.pk),
        subject_type="user",
        subject_id=str(member.pk),
    )
    dm = {"channel": "D-mona", "kind": "dm", "people": ["mona"]}
    assert bodies(recall(agent_api, dm, "milk")) == ["Mona takes oat milk"]
    assert bodies(recall(agent_api, {"channel": "D-max", "kind": "dm", "people": ["max"]}, "milk")) == []
    group = {"channel": "G-both", "kind": "private", "people": ["mona", "max"]}
    assert bodies(recall(agent_api, group, "milk")) == []
    # The DM is bound to mona: naming anyone else for it is a conflict, not a new audience.
    assert recall(agent_api, {**dm, "people": ["mona", "max"]}, "milk").status_code == 409
    # A read saying another kind does not change the record: the DM's record is used, and the notice says so.
    response = recall(agent_api, {**dm, "kind": "private"}, "milk")
    assert bodies(response) == ["Mona takes oat milk"]
    assert "it is a dm place (the call said private)" in response.json()["notice"]


def test_an_agent_does_not_recall_facts_another_agent_holds(agent_api, second_agent_api, general):
    remember(second_agent_api, general, "Second agent learned about tea")
    remember(agent_api, general, "First agent learned about tea")
    assert bodies(recall(agent_api, general, "tea")) == ["First agent learned about tea"]


def test_pinned_facts_come_first(agent_api, make_memory, general):
    make_memory(body="Coffee is strong")
    make_memory(body="Coffee coffee coffee is the best coffee")
    make_memory(body="Parking is behind the office", pinned=True)
    found = bodies(recall(agent_api, general, "coffee"))
    assert found[0] == "Parking is behind the office"
    assert set(found[1:]) == {"Coffee is strong", "Coffee coffee coffee is the best coffee"}
    first = recall(agent_api, general, "coffee").json()["results"][0]
    assert first["rank"]["pinned"] is True


def test_lexical_recall_ranks_by_words_and_any_word_may_match(agent_api, make_memory, general):
    make_memory(body="The printer on floor two jams")
    make_memory(body="Deploys happen on Tuesday")
    response = recall(agent_api, general, "when do deploys and releases happen?", mode="lexical")
    assert bodies(response) == ["Deploys happen on Tuesday"]
    assert response.json()["ranking"]["used"] == "lexical"


def test_recent_mode_is_newest_first(agent_api, make_memory, general):
    for body in ("first", "second", "third"):
        make_memory(body=body)
    response = recall(agent_api, general, "", mode="recent")
    assert bodies(response) == ["third", "second", "first"]
    assert response.json()["notice"] == ""


def test_a_question_less_hybrid_recall_falls_back_to_recent_and_says_so(agent_api, make_memory, general):
    make_memory(body="only fact")
    data = recall(agent_api, general, "", mode="hybrid").json()
    assert data["ranking"]["used"] == "recent" and "No question" in data["notice"]


def test_without_an_embedder_every_meaning_mode_falls_back_to_the_most_recent_facts_and_says_so(
    agent_api, make_memory, general
):
    make_memory(body="Lunch is at noon")
    make_memory(body="The office shuts at six")  # shares no word with the question: word matching would drop it
    for mode in ("auto", "semantic", "hybrid"):
        data = recall(agent_api, general, "when do we eat", mode=mode).json()
        assert data["ranking"]["used"] == "recent", mode
        assert "No embedder is configured" in data["notice"] and "most recent facts" in data["notice"]
        assert [row["body"] for row in data["results"]] == ["The office shuts at six", "Lunch is at noon"]
    # The positive control: asked for words, recall matches words.
    data = recall(agent_api, general, "lunch", mode="lexical").json()
    assert data["ranking"]["used"] == "lexical" and data["notice"] == ""
    assert [row["body"] for row in data["results"]] == ["Lunch is at noon"]


def test_the_limit_is_respected_and_defaults_to_ten(agent_api, make_memory, general):
    for index in range(14):
        make_memory(body=f"fact number {index}")
    assert len(bodies(recall(agent_api, general, "fact"))) == 10
    assert len(bodies(recall(agent_api, general, "fact", limit=3))) == 3


def test_recall_says_where_the_time_went(agent_api, make_memory, general):
    make_memory(body="fact")
    response = recall(agent_api, general, "fact")
    assert "sql;dur=" in response["Server-Timing"] and "embed;dur=" in response["Server-Timing"]
    # And the application's whole time, which spans the recall's (config.middleware.ServerTimingMiddleware).
    timings = dict(part.strip().split(";dur=") for part in response["Server-Timing"].split(","))
    assert float(timings["app"]) >= float(timings["recall"]) > 0
    # Contextual ranking's share of the statement's time, said apart from it.
    assert float(timings["sql"]) >= float(timings["rank"]) >= 0


def test_every_answer_says_the_applications_time(agent_api, client):
    refused = agent_api.post("/api/v1/recall", {"question": ""}, format="json")
    page = client.get("/accounts/login/")
    for response in (refused, page):
        assert response.status_code in (200, 400)
        assert response["Server-Timing"].startswith("app;dur=")


@pytest.fixture
def local_embedder(settings):
    settings.EMBEDDER = "local"
    return embedders.get_embedder()


def embed_rows(rows, model=None):
    embedder = embedders.get_embedder()
    vectors = embedder.embed([row.body for row in rows])
    for row, vector in zip(rows, vectors, strict=True):
        Memory.objects.filter(pk=row.pk).update(embedding=vector, embedding_model=model or embedder.name)


def test_hybrid_recall_finds_by_meaning_and_fuses_both_lists(agent_api, make_memory, general, local_embedder):
    rows = [
        make_memory(body="The cat sleeps on the warm windowsill"),
        make_memory(body="Quarterly revenue grew by eight percent"),
        make_memory(body="Invoices are paid within thirty days"),
    ]
    embed_rows(rows)
    data = recall(agent_api, general, "How did sales and income change?", mode="hybrid").json()
    assert data["ranking"]["used"] == "hybrid" and data["ranking"]["vector_search"] == "exact"
    assert data["ranking"]["embedding_model"] == "all-MiniLM-L6-v2"
    assert data["results"][0]["body"] == "Quarterly revenue grew by eight percent"
    assert data["results"][0]["rank"]["semantic_rank"] == 1
    assert data["notice"] == ""


def test_auto_recall_ranks_contextually_when_the_question_can_be_embedded(
    agent_api, make_memory, general, local_embedder
):
    rows = [
        make_memory(body="The cat sleeps on the warm windowsill"),
        make_memory(body="Quarterly revenue grew by eight percent"),
    ]
    embed_rows(rows)
    data = recall(agent_api, general, "How did sales and income change?").json()
    assert data["ranking"]["requested"] == "auto" and data["ranking"]["used"] == "contextual"
    assert data["ranking"]["lists"] == ["semantic", "lexical"] and data["ranking"]["contextual"]["candidates"] == 40
    assert data["results"][0]["body"] == "Quarterly revenue grew by eight percent"


def test_rows_not_embedded_yet_are_found_by_words_and_the_notice_says_so(
    agent_api, make_memory, general, local_embedder
):
    embed_rows([make_memory(body="Revenue grew this quarter")])
    make_memory(body="Revenue targets are set in January")
    data = recall(agent_api, general, "revenue").json()
    assert "1 fact(s) here are not searchable by meaning yet" in data["notice"]
    assert {row["body"] for row in data["results"]} == {
        "Revenue grew this quarter",
        "Revenue targets are set in January",
    }


def test_vectors_of_another_model_are_never_compared(agent_api, make_memory, general, local_embedder):
    embed_rows([make_memory(body="Quarterly revenue grew by eight percent")], model="some-older-model")
    data = recall(agent_api, general, "How did sales change?", mode="semantic").json()
    assert data["results"] == []
    # Counted as not searchable yet, not silently missing.
    assert "1 fact(s) here are not searchable by meaning yet" in data["notice"]
