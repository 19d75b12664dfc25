"""Every change to a memory leaves an audit row, and every steward decision is its own record.

One scenario walks every write path there is (the API, a person's page, the
worker, consolidation, the purge, a subject erasure, the stewards' decisions
and a promotion), then each row's history is checked against its final state.
A scan of the code keeps new write paths from skipping the audit unnoticed.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import Membership
from accounts.services import agent_create, user_create
from admissions.models import AdmissionRecord
from admissions.services import admission_decide, claim_promote, claim_submit, stance_create
from memories.embeddings.writes import memory_embed
from memories.maintenance import memories_purge_expired
from memories.models import Memory, MemoryAudit
from memories.tests.loopback import EmbeddingsStandIn
from threads.consolidation import thread_consolidate
from threads.models import Thread

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
# Code that may write memories_memory directly, and why that is audited (or not a change to the memory).
DIRECT_WRITERS = {
    "memories/services.py": "the services: each writes its audit row in the same transaction",
    "memories/embeddings/writes.py": "embedding: an `embed` audit row per vector written; failures are bookkeeping",
}


def actions(memory) -> list[str]:
    return list(MemoryAudit.objects.filter(memory=memory).order_by("at", "id").values_list("action", flat=True))


def test_every_write_path_leaves_its_audit_row(org, owner, member, settings):
    settings.EMBEDDER = "none"
    _, token = agent_create(organisation=org, name="helper")
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    dm = {"channel": "D-mona", "kind": "dm", "people": [member.username]}
    public = {"channel": "C-all", "kind": "public", "people": [member.username]}

    def remember(place, body, **extra):
        response = agent.post("/api/v1/memories", {"body": body, "place": place, **extra}, format="json")
        assert response.status_code == 201, response.content
        return response.json()["id"]

    pinned = remember(dm, "Prefers tea")
    assert agent.post(f"/api/v1/memories/{pinned}/pin", {"place": dm}, format="json").status_code == 200
    toggled = remember(dm, "Works from Leeds")
    agent.post(f"/api/v1/memories/{toggled}/pin", {"place": dm}, format="json")
    agent.post(f"/api/v1/memories/{toggled}/unpin", {"place": dm}, format="json")
    corrected = remember(public, "The office opens at 9", scope="workspace", subject_type="workspace")
    correction = {"body": "The office opens at 8", "place": public}
    assert agent.post(f"/api/v1/memories/{corrected}/supersede", correction, format="json").status_code == 201
    forgotten = remember(dm, "Her locker code is 1234")
    assert agent.delete(f"/api/v1/memories/{forgotten}", {"place": dm}, format="json").status_code == 200
    expired = remember(dm, "Is on leave this week", ttl_days=1)
    # A person's own page.
    page = Client()
    page.force_login(member)
    note = Memory.objects.get(pk=remember(dm, "Likes early meetings"))
    assert page.post(f"/me/memories/{note.pk}/correct", {"body": "Likes late meetings"}).status_code == 302
    # Consolidation learns from a thread.
    event = {"id": "e-1", "role": "user", "author": member.username, "text": "My timezone is CET"}
    event.update({"time": datetime(2026, 11, 30, 9, tzinfo=UTC).isoformat(), "place": dm})
    assert agent.post("/api/v1/threads/T-1/events", {"events": [event]}, format="json").status_code in (200, 201)
    thread_consolidate(thread_id=Thread.objects.get(external_id="T-1").pk)
    # The worker embeds everything still live.
    with EmbeddingsStandIn() as stand_in:
        settings.EMBEDDER = "openai"
        settings.EMBEDDER_OPENAI_BASE_URL = stand_in.base_url
        settings.EMBEDDER_OPENAI_MODEL = "stand-in"
        memory_embed(ids=[str(pk) for pk in Memory.objects.values_list("pk", flat=True)])
    settings.EMBEDDER = "none"
    # The nightly purge, long after the short-lived fact expired.
    memories_purge_expired(grace_days=0, now=datetime.now(tz=UTC) + timedelta(days=2))
    # Stewards: decisions on claims, and a promotion.
    steward = user_create(username="stella", organisation=org, role=Membership.Role.STEWARD)
    second = user_create(username="sam", organisation=org, role=Membership.Role.STEWARD)
    claim = claim_submit(
        organisation=org,
        body="The base rate is 4.75%",
        slug="sys:base-rate",
        entity="central-bank",
        transparency="ledger",
        as_of=date.today(),
        evidence_refs=[{"kind": "url", "ref": "https://bank.example/rates"}],
        user=member,
    )
    admission_decide(claim=claim, steward=steward, decision="challenge", reason="source is a blog")
    admission_decide(claim=claim, steward=second, decision="admit", reason="checked the bank's page")
    stance = stance_create(id="base-rate", title="Base rate", body="The base rate.", reviewed_by=steward)
    claim_promote(claim=claim, steward=steward, stance=stance, reason="settled")
    # And a subject erasure, last.
    owner_api = APIClient()
    owner_api.force_login(owner)
    assert owner_api.post(f"/api/v1/subjects/user/{member.pk}/erase", {}, format="json").status_code == 200

    rows = list(Memory.objects.all())
    assert len(rows) >= 10
    for row in rows:
        history = actions(row)
        assert history[0] == "remember", (row.pk, history)
        if row.superseded_by_id:
            entry = MemoryAudit.objects.get(memory=row, action="supersede")
            assert entry.detail["replacement"] == str(row.superseded_by_id)
        if row.redacted_at:
            assert history[-1] in ("redact", "purge"), (row.pk, history)
            assert MemoryAudit.objects.filter(memory=row, action__in=("redact", "purge")).count() == 1
        if row.embedding_model:
            assert "embed" in history
        assert history.count("pin") - history.count("unpin") == int(row.pinned), (row.pk, history)
        assert all(entry.actor_label for entry in MemoryAudit.objects.filter(memory=row))
    assert actions(Memory.objects.get(pk=toggled)).count("unpin") == 1
    assert "purge" in actions(Memory.objects.get(pk=expired))
    # Every steward decision is a record naming the steward and the reason; the promotion too.
    records = list(AdmissionRecord.objects.filter(claim=claim).order_by("at", "id"))
    assert [(r.decision, r.steward_id) for r in records] == [
        ("challenge", steward.pk),
        ("admit", second.pk),
        ("promote", steward.pk),
    ]
    assert all(record.reason for record in records)


def test_no_code_writes_memories_directly_outside_the_audited_paths():
    pattern = re.compile(
        r"Memory\.objects[^\n]*\.(update|delete)\(|UPDATE memories_memory|DELETE FROM memories_memory"
        r"|INSERT INTO memories_memory",
        re.IGNORECASE,
    )
    writers = set()
    apps = [top for top in ROOT.iterdir() if (top / "__init__.py").exists() and top.name != "tests"]
    for path in (path for app in apps for path in app.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if "/tests/" in relative or "/migrations/" in relative:
            continue
        if pattern.search(path.read_text()):
            writers.add(relative)
    assert len(apps) >= 6  # accounts, admissions, config, memories, tenancy, threads, web
    assert writers <= set(DIRECT_WRITERS), sorted(writers - set(DIRECT_WRITERS))
