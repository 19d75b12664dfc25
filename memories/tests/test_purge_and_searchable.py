"""The nightly purge of long-expired rows, and how admin shows whether a row is searchable."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.embeddings.writes import memory_embed
from memories.maintenance import memories_purge_expired
from memories.models import Memory, MemoryAudit

pytestmark = pytest.mark.django_db


def test_rows_expired_past_the_grace_lose_body_vector_and_search_vector_and_keep_a_receipt(make_memory):
    now = timezone.now()
    old = make_memory(body="Long expired zebracorn")
    recent = make_memory(body="Recently expired")
    alive = make_memory(body="Still alive")
    memory_embed(ids=[old.pk, recent.pk, alive.pk], coalesce=False)
    Memory.objects.filter(pk=old.pk).update(expires_at=now - timedelta(days=31))
    Memory.objects.filter(pk=recent.pk).update(expires_at=now - timedelta(days=29))

    assert memories_purge_expired(grace_days=30, now=now) == 1
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT body, embedding IS NULL, search_vector::text, redacted_at IS NOT NULL, redaction_reason"
            " FROM memories_memory WHERE id = %s",
            [old.pk],
        )
        body, no_vector, search, redacted, reason = cursor.fetchone()
    assert (body, no_vector, search, redacted) == ("", True, "", True)
    assert "purged after 30 days' grace" in reason
    assert MemoryAudit.objects.filter(memory_id=old.pk, action=MemoryAudit.Action.PURGE).count() == 1
    assert Memory.objects.get(pk=recent.pk).body == "Recently expired"
    assert Memory.objects.get(pk=alive.pk).embedding is not None
    # Running again purges nothing more.
    assert memories_purge_expired(grace_days=30, now=now) == 0


def test_admin_shows_whether_a_row_is_searchable_and_why_not(admin_client, make_memory, member):
    waiting = make_memory(body="A pending row")
    failed = make_memory(body="The embedder refused this")
    done = make_memory(body="Embedded already")
    memory_embed(ids=[done.pk], coalesce=False)
    Memory.objects.filter(pk=failed.pk).update(embedding_attempts=3, embedding_error="refused the input (400)")
    html = admin_client.get("/admin/memories/memory/").content.decode()
    assert "not yet searchable: waiting for a worker" in html
    assert "not yet searchable after 3 attempts: refused the input (400)" in html
    bodies = {waiting.pk: "A pending row", failed.pk: "The embedder refused this", done.pk: "Embedded already"}
    for choice, shown in (("yes", done.pk), ("waiting", waiting.pk), ("failed", failed.pk)):
        page = admin_client.get("/admin/memories/memory/", {"searchable": choice}).content.decode()
        assert [pk for pk, body in bodies.items() if body in page] == [shown], choice
