"""Fault test: an embedder that refuses some rows. The rows are stored, retried with backoff
by a real worker, and shown in admin as not yet searchable, with the error."""

from __future__ import annotations

import time

import pytest

from memories.models import Memory
from memories.tests import processes
from memories.tests.loopback import EmbeddingsStandIn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MODEL = "standin-embed-384"


def test_rows_the_embedder_refuses_are_kept_retried_and_shown_as_not_yet_searchable(
    make_memory, tmp_path, settings, admin_client
):
    with EmbeddingsStandIn(refuse_marker="REFUSE-ME", unavailable_for=1) as standin:
        settings.EMBEDDER = "openai"
        settings.EMBEDDER_OPENAI_BASE_URL = standin.base_url
        settings.EMBEDDER_OPENAI_MODEL = MODEL
        good = [make_memory(body=f"An ordinary fact, number {i}") for i in range(12)]
        bad = [make_memory(body=f"A fact the embedder refuses: REFUSE-ME {i}") for i in range(3)]
        worker = processes.worker(
            tmp_path / "worker.log",
            queues="embed",
            ARCHIVIST_EMBEDDER="openai",
            ARCHIVIST_EMBEDDER_BASE_URL=standin.base_url,
            ARCHIVIST_EMBEDDER_MODEL=MODEL,
            ARCHIVIST_EMBEDDING_MAX_ATTEMPTS="3",
            ARCHIVIST_EMBEDDING_RETRY_BACKOFF_SECONDS="0.2",
        ).start()
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                done = Memory.objects.filter(embedding_model=MODEL).count()
                exhausted = Memory.objects.filter(embedding_attempts__gte=3).count()
                if done == len(good) and exhausted == len(bad):
                    break
                time.sleep(0.1)
        finally:
            worker.stop()

    assert Memory.objects.count() == len(good) + len(bad), "every row is stored whatever the embedder does"
    assert Memory.objects.filter(pk__in=[m.pk for m in good], embedding_model=MODEL).count() == len(good)
    for memory in bad:
        memory.refresh_from_db()
        assert memory.embedding is None and memory.embedding_model == ""
        assert memory.embedding_attempts == 3
        assert "refused the input (400)" in memory.embedding_error
        # Retried: the endpoint saw this text once per attempt, at least.
        assert sum(memory.body == text for text in standin.inputs()) >= 3
    # The first call found the service unavailable (503): a transient failure, retried, not a row's fault.
    assert "Retry in" in worker.log() or "retrying" in worker.log()

    page = admin_client.get("/admin/memories/memory/", {"searchable": "failed"})
    html = page.content.decode()
    assert page.status_code == 200
    assert html.count("not yet searchable after 3 attempts") == len(bad)
    assert "refused the input (400)" in html
    assert "An ordinary fact" not in html
