"""Embedding writes: exactly once per model (a conditional UPDATE), never on an erased row,
failures counted, the sweep's choice of rows, re-embedding, and the embedders themselves."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
from django.core.management import call_command
from django.utils import timezone

from config.celery import app
from memories.embeddings.embedders import LOCAL_MODEL_NAME, EmbeddingError, OpenAIEmbedder, embed_query, get_embedder
from memories.embeddings.writes import ids_to_retry, memories_needing_embedding, memory_embed, memory_embed_batch
from memories.models import Memory, MemoryAudit
from memories.services import memory_redact, memory_supersede
from memories.tasks import sweep_embeddings
from memories.tests.loopback import EmbeddingsStandIn

pytestmark = pytest.mark.django_db


def embeds_of(memory) -> int:
    return MemoryAudit.objects.filter(memory=memory, action=MemoryAudit.Action.EMBED).count()


@pytest.fixture
def standin(settings):
    with EmbeddingsStandIn(refuse_marker="REFUSE") as server:
        settings.EMBEDDER = "openai"
        settings.EMBEDDER_OPENAI_BASE_URL = server.base_url
        settings.EMBEDDER_OPENAI_MODEL = "standin-384"
        yield server


def test_a_row_is_embedded_once_and_a_second_pass_counts_it_as_done(make_memory):
    memory = make_memory(body="Prefers tea")
    first = memory_embed(ids=[memory.pk])
    second = memory_embed(ids=[memory.pk])
    assert first.embedded == [str(memory.pk)] and second.embedded == [] and second.already_embedded == 1
    memory.refresh_from_db()
    assert memory.embedding_model == LOCAL_MODEL_NAME and len(memory.embedding) == 384
    assert abs(sum(v * v for v in memory.embedding) - 1) < 1e-4  # normalised
    assert embeds_of(memory) == 1


def test_an_erased_row_never_gets_a_vector(make_memory, member):
    memory = make_memory(body="Secret")
    memory_redact(memory=memory, reason="asked", actor=member)
    outcome = memory_embed(ids=[memory.pk])
    memory.refresh_from_db()
    assert outcome.embedded == [] and memory.embedding is None and embeds_of(memory) == 0


def test_a_task_for_one_row_embeds_its_organisations_recent_burst_but_not_another_organisations(
    make_memory, other_org, outsider
):
    rows = [make_memory(body=f"Fact {i}") for i in range(5)]
    elsewhere = make_memory(body="Their fact", organisation=other_org, owner=outsider, written_by=outsider)
    outcome = memory_embed_batch(ids=[rows[0].pk])
    assert sorted(outcome.embedded) == sorted(str(r.pk) for r in rows)
    elsewhere.refresh_from_db()
    assert elsewhere.embedding is None
    # Their own tasks then find them done.
    assert memory_embed_batch(ids=[rows[3].pk]).already_embedded == 1


def test_a_vector_of_an_old_model_is_replaced(make_memory):
    memory = make_memory(body="Prefers tea")
    Memory.objects.filter(pk=memory.pk).update(embedding=[0.1] * 384, embedding_model="old-model")
    assert memory_embed(ids=[memory.pk]).embedded == [str(memory.pk)]
    memory.refresh_from_db()
    assert memory.embedding_model == LOCAL_MODEL_NAME


def test_a_refused_text_is_stored_counted_and_retried_until_its_attempts_are_spent(make_memory, standin, settings):
    settings.EMBEDDING_MAX_ATTEMPTS = 2
    good = make_memory(body="Fine text")
    bad = make_memory(body="REFUSE this one")
    outcome = memory_embed(ids=[good.pk, bad.pk], coalesce=False)
    assert outcome.embedded == [str(good.pk)] and list(outcome.failed) == [str(bad.pk)]
    bad.refresh_from_db()
    assert bad.embedding_attempts == 1 and "refused the input (400)" in bad.embedding_error
    assert ids_to_retry(outcome.failed) == [str(bad.pk)]
    memory_embed(ids=[bad.pk])
    bad.refresh_from_db()
    assert bad.embedding_attempts == 2 and ids_to_retry([bad.pk]) == []
    # Another task holding the same id (a second retry chain) does not try past the limit.
    memory_embed(ids=[bad.pk])
    bad.refresh_from_db()
    assert bad.embedding_attempts == 2


def test_an_unavailable_service_fails_the_whole_batch_as_transient(make_memory, standin):
    standin.unavailable_for = 1
    rows = [make_memory(body=f"Fact {i}") for i in range(3)]
    outcome = memory_embed_batch(ids=[r.pk for r in rows], coalesce=False)
    assert outcome.transient and len(outcome.failed) == 3
    assert set(Memory.objects.values_list("embedding_attempts", flat=True)) == {1}
    assert len(memory_embed_batch(ids=[r.pk for r in rows]).embedded) == 3
    assert set(Memory.objects.values_list("embedding_attempts", "embedding_error")) == {(0, "")}


def test_the_sweep_picks_live_rows_without_a_current_vector(make_memory, member, settings):
    waiting = make_memory(body="Waiting")
    done = make_memory(body="Done")
    memory_embed(ids=[done.pk], coalesce=False)
    erased = make_memory(body="Erased")
    memory_redact(memory=erased, reason="r", actor=member)
    replaced = make_memory(body="Old version")
    newer = memory_supersede(memory=replaced, body="New version", actor=member)
    expired = make_memory(body="Expired")
    now = timezone.now()
    Memory.objects.filter(pk=expired.pk).update(expires_at=now - timedelta(days=1))
    spent = make_memory(body="Spent")
    Memory.objects.filter(pk=spent.pk).update(
        embedding_attempts=settings.EMBEDDING_MAX_ATTEMPTS, embedding_error="boom", updated_at=now
    )
    picked = set(memories_needing_embedding(now=now).values_list("body", flat=True))
    assert picked == {"Waiting", "New version"}
    # A day later, a row that used up its attempts is tried again.
    later = now + timedelta(hours=settings.EMBEDDING_FAILED_RETRY_HOURS + 1)
    assert "Spent" in set(memories_needing_embedding(now=later).values_list("body", flat=True))
    # Rows younger than the grace are left to the task their write queued.
    assert not memories_needing_embedding(now=now, grace=timedelta(minutes=5)).exists()
    assert waiting.pk and newer.pk


def test_the_sweep_queues_the_rows_on_the_embed_queue_in_batches(make_memory, settings):
    settings.EMBEDDING_BATCH_SIZE = 2
    for i in range(5):
        make_memory(body=f"Fact {i}")
    broker = redis.Redis(unix_socket_path=settings.REDIS_URL.removeprefix("unix://"))
    broker.delete("embed")
    assert sweep_embeddings(grace_seconds=0) == 5
    assert broker.llen("embed") == 3
    broker.delete("embed")


def test_reembed_moves_every_live_row_to_the_current_model_with_a_progress_bar(make_memory, capsys):
    rows = [make_memory(body=f"Fact {i}") for i in range(5)]
    Memory.objects.filter(pk__in=[r.pk for r in rows[:3]]).update(embedding=[0.1] * 384, embedding_model="old-model")
    call_command("reembed", "--batch-size", "2")
    out, err = capsys.readouterr()
    assert "Embedded 5 memories with all-MiniLM-L6-v2" in out
    assert "reembed" in err and "5/5" in err
    assert Memory.objects.filter(embedding_model=LOCAL_MODEL_NAME).count() == 5


def test_reembed_refuses_to_run_without_an_embedder(settings):
    from django.core.management.base import CommandError

    settings.EMBEDDER = "none"
    with pytest.raises(CommandError, match="No embedder"):
        call_command("reembed")


def test_embed_query_gives_a_unit_vector_of_the_current_model_or_none(settings):
    vector = embed_query("what does mona drink?")
    assert len(vector) == 384 and abs(sum(v * v for v in vector) - 1) < 1e-4
    settings.EMBEDDER = "none"
    assert embed_query("anything") is None and get_embedder().name == ""


@pytest.mark.parametrize("text", ["hi", "What did Mona paint after the lake trip last May?", "word " * 400])
def test_a_question_embedded_straight_through_the_model_equals_the_stored_vectors_pipeline(text):
    # Recall compares the question with vectors written by `embed`: the direct path must be the same function.
    embedder = get_embedder()
    stored_way = embedder.embed([text])[0]
    question_way = embedder.embed_one(text)
    assert max(abs(a - b) for a, b in zip(stored_way, question_way, strict=True)) < 1e-6


def test_the_openai_embedder_speaks_v1_embeddings_and_checks_what_comes_back(standin):
    embedder = OpenAIEmbedder(
        base_url=standin.base_url + "/v1", model="text-embedding-3-small", key="k", timeout=5, dimensions=384
    )
    vectors = embedder.embed(["a", "b"])
    assert len(vectors) == 2 and len(vectors[0]) == 384
    request = standin.requests[-1]
    assert request["path"] == "/v1/embeddings" and request["authorization"] == "Bearer k"
    assert request["body"]["dimensions"] == 384 and request["body"]["input"] == ["a", "b"]
    # Other servers are not sent a parameter they may not know.
    OpenAIEmbedder(base_url=standin.base_url, model="nomic-embed-text", key="", timeout=5, dimensions=384).embed(["a"])
    assert "dimensions" not in standin.requests[-1]["body"]
    standin.dimensions = 768
    with pytest.raises(EmbeddingError, match="768 dimensions"):
        embedder.embed(["a"])


def test_an_unreachable_embeddings_server_is_a_transient_failure():
    embedder = OpenAIEmbedder(base_url="http://127.0.0.1:9", model="m", key="", timeout=1, dimensions=384)
    with pytest.raises(EmbeddingError) as raised:
        embedder.embed(["a"])
    assert raised.value.transient


def test_the_beat_schedule_names_tasks_that_exist():
    schedule = app.conf.beat_schedule
    app.loader.import_default_modules()
    for name in ("embed-sweep", "purge-expired-memories", "consolidation-sweep"):
        assert schedule[name]["task"] in app.tasks, name


def test_embedding_tasks_are_acknowledged_late_and_given_back_when_a_worker_dies():
    from memories.tasks import embed_memories
    from threads.tasks import consolidate_thread

    for task in (embed_memories, consolidate_thread, sweep_embeddings):
        assert task.acks_late and task.reject_on_worker_lost
