"""Writing vectors: each live row is embedded exactly once per model, failures are counted, each vector
leaves an `embed` receipt in its transaction."""

# A worker may die mid-batch and a broker may deliver a message twice, so rows are claimed with
# `FOR UPDATE SKIP LOCKED` (no two workers encode one row at once) and the vector is written by a
# conditional UPDATE (`embedding IS NULL OR embedding_model <> current`): a redelivered task finds the row
# done, writes nothing, and counts it `already_embedded`.

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Length
from django.utils import timezone

from memories.db.predicates import current_q, unexpired_q
from memories.embeddings.embedders import Embedder, EmbeddingError, get_embedder
from memories.models import Bucket, Memory, MemoryAudit

logger = logging.getLogger(__name__)

WORKER_LABEL = "worker:embed"
# A task for a few ids also claims other rows of the same organisation written
# in this window that still lack a vector, so a burst of single-row writes is
# embedded in full batches; their own tasks then find them done.
COALESCE_WINDOW = timedelta(minutes=10)
ERROR_MAX_CHARS = 1_000
REEMBED_WINDOW_BATCHES = 16


@dataclass
class EmbedOutcome:
    """What one pass over some ids did."""

    embedded: list[str] = field(default_factory=list)
    already_embedded: int = 0
    claimed_elsewhere: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    transient: bool = False

    def merge(self, other: EmbedOutcome) -> None:
        self.embedded.extend(other.embedded)
        self.already_embedded += other.already_embedded
        self.claimed_elsewhere += other.claimed_elsewhere
        self.failed.update(other.failed)
        self.transient = self.transient or other.transient


def needs_embedding(model: str) -> Q:
    """Rows that have content and no vector of `model`."""
    return Q(redacted_at__isnull=True) & ~Q(body="") & (Q(embedding__isnull=True) | ~Q(embedding_model=model))


def live(now: datetime | None = None) -> Q:
    now = now or timezone.now()
    return current_q() & unexpired_q(now)


def attemptable(now: datetime | None = None) -> Q:
    """Rows with attempts left, or whose last failed attempt is EMBEDDING_FAILED_RETRY_HOURS old.

    Two retry chains for one row (its own task's, and the one of a task that
    claimed it with its burst) take turns on the row lock; this stops the
    second one from trying past the limit.
    """
    now = now or timezone.now()
    retry_after = now - timedelta(hours=settings.EMBEDDING_FAILED_RETRY_HOURS)
    return Q(embedding_attempts__lt=settings.EMBEDDING_MAX_ATTEMPTS) | Q(updated_at__lte=retry_after)


def memories_needing_embedding(*, now: datetime | None = None, grace: timedelta = timedelta(0)) -> QuerySet[Memory]:
    """Live rows with no vector of the current model, oldest first.

    Rows that used up their attempts are left alone until
    EMBEDDING_FAILED_RETRY_HOURS have passed since the last one, so a text the
    embedder refuses is not hammered every sweep.
    """
    now = now or timezone.now()
    model = get_embedder().name
    return Memory.objects.filter(
        live(now), needs_embedding(model), attemptable(now), created_at__lte=now - grace
    ).order_by("created_at")


def _vector_literal(vector: Iterable[float]) -> str:
    return "[" + ",".join(repr(float(value)) for value in vector) + "]"


def vectors_write(*, rows: list[Memory], vectors: list[list[float]], model: str) -> list[str]:
    """The conditional UPDATE with its receipts; returns the ids it wrote. Runs inside the caller's transaction
    (the worker's claim, or the write of new rows)."""
    if not rows:
        return []
    values = ", ".join(["(%s::uuid, %s::halfvec)"] * len(rows))
    params: list = []
    for row, vector in zip(rows, vectors, strict=True):
        params.extend([str(row.id), _vector_literal(vector)])
    sql = f"""
        UPDATE memories_memory AS m
           SET embedding = v.embedding, embedding_model = %s, embedding_error = '',
               embedding_attempts = 0, updated_at = now()
          FROM (VALUES {values}) AS v(id, embedding)
         WHERE m.id = v.id AND m.redacted_at IS NULL
           AND (m.embedding IS NULL OR m.embedding_model <> %s)
     RETURNING m.id
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [model, *params, model])
        written = {str(row[0]) for row in cursor.fetchall()}
    by_id = {str(row.id): row for row in rows}
    MemoryAudit.objects.bulk_create(
        [
            MemoryAudit(
                organisation_id=by_id[memory_id].organisation_id,
                memory_id=memory_id,
                action=MemoryAudit.Action.EMBED,
                actor_label=WORKER_LABEL,
                detail={"model": model, "failed_attempts_before": by_id[memory_id].embedding_attempts},
            )
            for memory_id in sorted(written)
        ]
    )
    return sorted(written)


def _record_failures(*, failed: dict[str, str], model: str) -> None:
    """Count a failed attempt on each row still lacking a vector, and keep the error for admin."""
    now = timezone.now()
    with transaction.atomic():
        for memory_id, error in failed.items():
            Memory.objects.filter(needs_embedding(model), pk=memory_id).update(
                embedding_attempts=F("embedding_attempts") + 1,
                embedding_error=error[:ERROR_MAX_CHARS],
                updated_at=now,
            )


def _claim(*, ids: list[str], model: str, room: int, coalesce: bool) -> tuple[list[Memory], int, int]:
    """Lock the rows of `ids` that still need a vector, plus, when asked, recent rows of the same organisations.

    Returns the claimed rows, how many of `ids` were already done (or erased),
    and how many another worker holds right now.
    """
    claimed = list(
        Memory.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(needs_embedding(model), attemptable(), pk__in=ids)
        .only("id", "body", "organisation_id", "embedding_attempts")
        .order_by("pk")[:room]
    )
    unclaimed = set(ids) - {str(row.id) for row in claimed}
    # An unclaimed row still in need is locked by another worker; the rest are done (or out of attempts).
    held_elsewhere = (
        Memory.objects.filter(needs_embedding(model), attemptable(), pk__in=unclaimed).count() if unclaimed else 0
    )
    if coalesce and claimed and len(claimed) < room:
        since = timezone.now() - COALESCE_WINDOW
        for organisation_id in sorted({row.organisation_id for row in claimed}):
            extra = list(
                Memory.objects.select_for_update(skip_locked=True, of=("self",))
                .filter(
                    needs_embedding(model),
                    organisation_id=organisation_id,
                    bucket__in=[Bucket.USER, Bucket.LEARNED],
                    created_at__gte=since,
                    embedding_attempts=0,
                )
                .exclude(pk__in=[row.id for row in claimed])
                .only("id", "body", "organisation_id", "embedding_attempts")
                # Shortest first: the batch is padded to its longest text.
                .order_by(Length("body"), "-created_at")[: room - len(claimed)]
            )
            claimed.extend(extra)
            if len(claimed) >= room:
                break
    return claimed, len(unclaimed) - held_elsewhere, held_elsewhere


def _encode(embedder: Embedder, rows: list[Memory]) -> tuple[list[Memory], list[list[float]], dict[str, str]]:
    """Vectors for the rows; a batch the embedder refuses is retried row by row to find the culprits."""
    try:
        return rows, embedder.embed([row.body for row in rows]), {}
    except EmbeddingError as error:
        if error.transient or len(rows) == 1:
            raise
    done: list[Memory] = []
    vectors: list[list[float]] = []
    failed: dict[str, str] = {}
    for row in rows:
        try:
            vectors.append(embedder.embed([row.body])[0])
            done.append(row)
        except EmbeddingError as error:
            if error.transient:
                raise
            failed[str(row.id)] = str(error)
    return done, vectors, failed


def memory_embed_batch(*, ids: list[str], coalesce: bool = True, embedder: Embedder | None = None) -> EmbedOutcome:
    """Embed at most one batch: claim, encode, write conditionally, audit; failures are counted."""
    embedder = embedder or get_embedder()
    outcome = EmbedOutcome()
    if not embedder.available:
        return outcome
    model = embedder.name
    ids = [str(memory_id) for memory_id in ids]
    # The common redelivery and coalescing case: every row is done already. One read, no lock.
    if not Memory.objects.filter(needs_embedding(model), attemptable(), pk__in=ids).exists():
        outcome.already_embedded = len(ids)
        return outcome
    failed: dict[str, str] = {}
    claimed: list[Memory] = []
    try:
        with transaction.atomic():
            claimed, outcome.already_embedded, outcome.claimed_elsewhere = _claim(
                ids=ids, model=model, room=max(len(ids), settings.EMBEDDING_BATCH_SIZE), coalesce=coalesce
            )
            if claimed:
                rows, vectors, failed = _encode(embedder, claimed)
                outcome.embedded = vectors_write(rows=rows, vectors=vectors, model=model)
                # Claimed under lock, so this stays 0 unless the guard had to act.
                outcome.already_embedded += len(rows) - len(outcome.embedded)
    except EmbeddingError as error:
        # The service failed, not the text: every claimed row counts an attempt.
        outcome.transient = True
        failed = {str(row.id): str(error) for row in claimed}
    if failed:
        _record_failures(failed=failed, model=model)
        outcome.failed = failed
    return outcome


def memory_embed(
    *,
    ids: list[str],
    coalesce: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> EmbedOutcome:
    """Embed these rows in batches; `progress(done, total)` is called after each batch."""
    ids = [str(uuid.UUID(str(memory_id))) for memory_id in ids]
    outcome = EmbedOutcome()
    size = settings.EMBEDDING_BATCH_SIZE
    for start in range(0, len(ids), size):
        chunk = ids[start : start + size]
        outcome.merge(memory_embed_batch(ids=chunk, coalesce=coalesce))
        if progress:
            progress(min(start + size, len(ids)), len(ids))
    return outcome


def ids_to_retry(failed: Iterable[str]) -> list[str]:
    """Of the rows that failed, those with attempts left and still needing a vector."""
    model = get_embedder().name
    return [
        str(memory_id)
        for memory_id in Memory.objects.filter(
            needs_embedding(model), pk__in=list(failed), embedding_attempts__lt=settings.EMBEDDING_MAX_ATTEMPTS
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    ]


def by_length(pairs: Iterable[tuple[object, int]]) -> list[str]:
    """Ids ordered by the length of their text. The model pads every text of a batch to the
    longest one, so batches of similar lengths waste less work than batches in id order."""
    return [str(memory_id) for memory_id, _ in sorted(pairs, key=lambda pair: (pair[1], str(pair[0])))]


def memories_reembed(
    *, batch_size: int | None = None, progress: Callable[[int, int, EmbedOutcome], None] | None = None
) -> EmbedOutcome:
    """Move every live row to the current model, in batches. Recall keeps serving meanwhile:
    a row keeps its old vector (ignored by recall, which compares only the current model's)
    until the new one replaces it, and lexical search never stops."""
    size = batch_size or settings.EMBEDDING_BATCH_SIZE
    model = get_embedder().name
    pending = Memory.objects.filter(live(), needs_embedding(model))
    total = pending.count()
    outcome = EmbedOutcome()
    done = 0
    after = None
    # Keyset pagination by id: rows done drop out of `pending`, failed ones do not,
    # so paging by position would skip or repeat rows. Each window of ids is then
    # embedded shortest first.
    while True:
        page = pending.order_by("pk")
        if after is not None:
            page = page.filter(pk__gt=after)
        window = list(page.values_list("pk", Length("body"))[: size * REEMBED_WINDOW_BATCHES])
        if not window:
            break
        after = window[-1][0]
        ids = by_length(window)
        for start in range(0, len(ids), size):
            outcome.merge(memory_embed_batch(ids=ids[start : start + size], coalesce=False))
            done += len(ids[start : start + size])
            if progress:
                progress(done, total, outcome)
    return outcome
