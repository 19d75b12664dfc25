"""The client against the real server: every turn call, typed answers, the cursor iterator, sync and async."""

from __future__ import annotations

import pytest
from archivist_client import Archivist, AsyncArchivist, Forgotten, Place, Refused
from archivist_client import models as m


def test_a_fact_is_remembered_recalled_rendered_and_its_injection_read(live_api):
    with Archivist(live_api.url, live_api.token, place=live_api.dm) as archivist:
        remembered = archivist.remember(body="Prefers to be called Mo", tier="profile", source_ref="msg-1")
        assert isinstance(remembered, m.Remembered)
        assert (remembered.scope, remembered.scope_label, remembered.source.ref) == ("person", "mona", "msg-1")

        recalled = archivist.recall(question="What is Mona called?", limit=5)
        assert [row.id for row in recalled.results] == [remembered.id]

        rendered = archivist.render(turn_id="turn-1", question="What is she called?")
        assert "Prefers to be called Mo" in rendered.text and rendered.facts[0].id == remembered.id

        injection = archivist.injection("turn-1")
        assert injection.fact_ids == [remembered.id]
        replay = archivist.replay("turn-1")
        assert replay.identical is True


def test_a_call_may_name_its_own_place_instead_of_the_default(live_api):
    with Archivist(live_api.url, live_api.token, place=live_api.dm) as archivist:
        # Outside a DM the client never chooses whom a fact is about: without a subject the server refuses it.
        with pytest.raises(Refused) as refused:
            archivist.remember(body="Mona's dog is called Rex", place=live_api.team)
        assert "subject_type" in refused.value.fields
        archivist.remember(body="The team ships on Fridays", place=Place(**live_api.team), subject_type="workspace")
        assert archivist.recall(question="ships", place=live_api.team).results[0].scope == "channel"
        # The DM with mona does not recall what was said in the team channel.
        assert archivist.recall(question="ships").results == []


def test_correct_pin_unpin_forget_and_get_answer_typed_memories(live_api):
    with Archivist(live_api.url, live_api.token, place=live_api.team) as archivist:
        first = archivist.remember(body="Standup is at 9", subject_type="workspace")
        corrected = archivist.correct(first.id, body="Standup is at 10")
        assert corrected.body == "Standup is at 10"
        detail = archivist.get(corrected.id)
        assert [version.body for version in detail.chain] == ["Standup is at 9", "Standup is at 10"]
        assert archivist.pin(corrected.id).pinned is True
        assert archivist.unpin(corrected.id).pinned is False
        receipt = archivist.forget(corrected.id, reason="asked to")
        assert receipt.state == "erased" and receipt.body == "" and receipt.receipt.reason == "asked to"
        with pytest.raises(Forgotten) as gone:
            archivist.get(corrected.id)
        assert gone.value.receipt["reason"] == "asked to" and gone.value.status == 410


def test_list_follows_the_cursors_past_one_page(live_api):
    with Archivist(live_api.url, live_api.token, place=live_api.team) as archivist:
        for index in range(7):
            archivist.remember(body=f"Fact number {index}", source_ref=f"ref-{index}", subject_type="workspace")
        rows = list(archivist.list(page_size=3))
        assert len(rows) == 7 and all(isinstance(row, m.Memory) for row in rows)
        assert [row.body for row in rows] == [f"Fact number {index}" for index in reversed(range(7))]
        assert [row.body for row in archivist.list(page_size=3, q="number", scope="channel")][:1] == ["Fact number 6"]


def test_the_client_reads_its_url_and_token_from_the_environment(archivist_env):
    with Archivist(place=archivist_env.general) as archivist:
        assert archivist.remember(body="Lunch is at noon", subject_type="workspace").scope == "channel"


def test_no_url_or_token_is_refused_by_name(monkeypatch):
    monkeypatch.delenv("ARCHIVIST_URL", raising=False)
    monkeypatch.delenv("ARCHIVIST_TOKEN", raising=False)
    with pytest.raises(ValueError, match="ARCHIVIST_URL"):
        Archivist(token="x")
    with pytest.raises(ValueError, match="ARCHIVIST_TOKEN"):
        Archivist("http://127.0.0.1:1")


def test_thread_events_subject_export_and_claims_through_the_client(live_api):
    with Archivist(live_api.url, live_api.token, place=live_api.dm) as archivist:
        ingested = archivist.ingest_events(
            "T-1",
            events=[
                {"id": "e-1", "role": "user", "author": "mona", "text": "Call me Mo.", "time": "2026-11-30T09:00:00Z"}
            ],
        )
        assert (ingested.accepted, ingested.events[0].id) == (1, "e-1")
        assert archivist.thread("T-1")["thread"] == "T-1"
        archivist.remember(body="Candidate prefers mornings", subject_type="candidate", subject_id="cand-1")
        exported = archivist.subject_export(subject_type="candidate", subject_id="cand-1")
        assert exported.count == 1 and exported.memories[0].body == "Candidate prefers mornings"
        erased = archivist.subject_erase(subject_type="candidate", subject_id="cand-1", reason="request #1")
        assert erased.erased == 1
        claim = archivist.submit_claim(
            body="The base rate is 4.75%",
            slug="sys:base-rate",
            entity="central-bank",
            transparency="ledger",
            as_of="2026-11-30",
            evidence_refs=[{"kind": "url", "ref": "https://bank.example/rates"}],
        )
        assert claim.status == "candidate" and archivist.claim(claim.id).slug == "sys:base-rate"


def test_the_async_client_has_the_same_methods(live_api, run_async):
    async def scenario():
        async with AsyncArchivist(live_api.url, live_api.token, place=live_api.team) as archivist:
            first = await archivist.remember(body="Deploys need two approvals", subject_type="workspace")
            recalled = await archivist.recall(question="approvals")
            listed = [row async for row in archivist.list(page_size=1)]
            corrected = await archivist.correct(first.id, body="Deploys need one approval")
            return first, recalled, listed, corrected

    first, recalled, listed, corrected = run_async(scenario())
    assert recalled.results[0].id == first.id
    assert [row.id for row in listed] == [first.id]
    assert corrected.body == "Deploys need one approval"


def test_remember_many_sends_batches_of_100_and_answers_each_item(live_api):
    items = [{"body": f"Bulk fact {n}", "subject_type": "workspace"} for n in range(150)]
    items[120] = {"body": "", "subject_type": "workspace"}
    with Archivist(live_api.url, live_api.token, place=live_api.general) as archivist:
        batch = archivist.remember_many(items)
        again = archivist.remember_many(items[:3])  # new keys: written again, not duplicates
    assert (batch.created, batch.refused, len(batch.items)) == (149, 1, 150)
    assert batch.items[120].index == 120 and batch.items[120].status == "refused" and "body" in batch.items[120].fields
    assert batch.items[149].memory.body == "Bulk fact 149"
    assert again.created == 3
