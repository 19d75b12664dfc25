"""Per-organisation HNSW indexes for large tenants, built in the background."""

# pgvector applies a query's filters *after* the approximate index scan, so one
# HNSW index over every tenant returns a handful of rows, or none, for all but
# the largest tenants (0.18 to 0.53 top-10 overlap measured at 1M rows; 0.8's
# iterative scans reached 0.72 to 0.98, still short). So:
#
# - below `MEMORY_VECTOR_HNSW_THRESHOLD` embedded live workspace rows, recall is
#   an exact scan over the covering index `memories_recall_cover_idx`;
# - above it, the organisation gets a partial HNSW index whose predicate names
#   it as a literal (`WHERE organisation_id = '…'::uuid AND …`). Recall writes
#   the same literal, so the planner proves the index applies at plan time.
#
# `vector_index_maintain` (a beat task) creates missing indexes with
# `CREATE INDEX CONCURRENTLY`, so writes continue while one builds, records each
# in `TenantVectorIndex`, and drops the index of an organisation that has shrunk
# well below the threshold. Recall uses an index only once it is recorded ready.

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.db import connection
from django.utils import timezone

from lib.kept import KeptAnswers
from memories.db.predicates import live_sql
from memories.models import TenantVectorIndex
from memories.recall.candidates import tenant_literal

logger = logging.getLogger(__name__)

# An index is dropped only when its tenant falls below this share of the
# threshold, so a tenant hovering at the line is not rebuilt every sweep.
DROP_BELOW_SHARE = 0.5
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
HNSW_CACHE_SECONDS = 30.0

_ready_index = KeptAnswers[str | None](HNSW_CACHE_SECONDS)


def _ready_index_read(organisation_id: str) -> str | None:
    return (
        TenantVectorIndex.objects.filter(organisation_id=organisation_id, state=TenantVectorIndex.State.READY)
        .values_list("index_name", flat=True)
        .first()
    )


def tenant_hnsw_index(organisation_id) -> str | None:
    """The ready HNSW index of this organisation, if it has one (kept briefly per process)."""
    return _ready_index.get(organisation_id, _ready_index_read)


def forget_hnsw_cache(organisation_id=None) -> None:
    _ready_index.forget(organisation_id)


def index_name_for(organisation_id) -> str:
    return f"memories_hnsw_{uuid.UUID(str(organisation_id)).hex}"


def index_predicate(organisation_id) -> str:
    return (
        f"organisation_id = {tenant_literal(organisation_id)} AND scope = 'workspace' AND {live_sql()}"
        " AND embedding IS NOT NULL"
    )


def tenant_vector_counts(*, at_least: int = 0) -> dict[str, int]:
    """Embedded live workspace rows per organisation, for those with at least `at_least`."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT organisation_id, count(*) FROM memories_memory"
            f" WHERE scope = 'workspace' AND {live_sql()} AND embedding IS NOT NULL"
            " GROUP BY organisation_id HAVING count(*) >= %s",
            [at_least],
        )
        return {str(organisation_id): count for organisation_id, count in cursor.fetchall()}


def _index_is_valid(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s",
            [name],
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def vector_index_build(*, organisation_id, rows: int = 0) -> TenantVectorIndex:
    """Build (or finish) one organisation's partial HNSW index, concurrently, and record it ready.

    Must run outside a transaction: CREATE INDEX CONCURRENTLY refuses one.
    """
    name = index_name_for(organisation_id)
    record, _ = TenantVectorIndex.objects.update_or_create(
        organisation_id=organisation_id,
        defaults={"index_name": name, "state": TenantVectorIndex.State.BUILDING, "error": ""},
    )
    try:
        with connection.cursor() as cursor:
            if not _index_is_valid(name):
                # A concurrent build that failed leaves an invalid index behind; start again.
                cursor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
            cursor.execute(f"SET maintenance_work_mem = '{int(settings.MEMORY_VECTOR_BUILD_MEMORY_MB)}MB'")
            # One build process: the host has two cores and serves requests meanwhile.
            cursor.execute("SET max_parallel_maintenance_workers = 0")
            cursor.execute(
                f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{name}" ON memories_memory'
                " USING hnsw (embedding halfvec_cosine_ops)"
                f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
                f" WHERE {index_predicate(organisation_id)}"
            )
            cursor.execute("RESET maintenance_work_mem")
            cursor.execute("RESET max_parallel_maintenance_workers")
    except Exception as error:  # noqa: BLE001 - recorded, and recall keeps using the exact scan
        logger.exception("building %s failed", name)
        record.state = TenantVectorIndex.State.FAILED
        record.error = str(error)[:2000]
        record.save(update_fields=["state", "error", "updated_at"])
        return record
    if not _index_is_valid(name):
        record.state = TenantVectorIndex.State.FAILED
        record.error = "the index was built but PostgreSQL marked it invalid"
        record.save(update_fields=["state", "error", "updated_at"])
        return record
    record.state = TenantVectorIndex.State.READY
    record.rows_at_build = rows
    record.built_at = timezone.now()
    record.save(update_fields=["state", "rows_at_build", "built_at", "updated_at"])
    forget_hnsw_cache(organisation_id)
    logger.info("built %s over %d rows", name, rows)
    return record


def vector_index_drop(*, organisation_id) -> None:
    name = index_name_for(organisation_id)
    # Recall stops choosing the index before it goes, so no query plans against a dropped index.
    TenantVectorIndex.objects.filter(organisation_id=organisation_id).delete()
    forget_hnsw_cache(organisation_id)
    with connection.cursor() as cursor:
        cursor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')


def vector_index_maintain(*, threshold: int | None = None) -> dict:
    """Create the indexes tenants above the threshold lack; drop those of tenants far below it."""
    threshold = threshold or settings.MEMORY_VECTOR_HNSW_THRESHOLD
    counts = tenant_vector_counts(at_least=int(threshold * DROP_BELOW_SHARE))
    built, dropped = [], []
    ready = {
        str(organisation_id): state
        for organisation_id, state in TenantVectorIndex.objects.values_list("organisation_id", "state")
    }
    for organisation_id, count in sorted(counts.items(), key=lambda item: -item[1]):
        if count >= threshold and ready.get(organisation_id) != TenantVectorIndex.State.READY:
            vector_index_build(organisation_id=organisation_id, rows=count)
            built.append(organisation_id)
    for organisation_id in ready:
        if organisation_id not in counts:
            vector_index_drop(organisation_id=organisation_id)
            dropped.append(organisation_id)
    return {"built": built, "dropped": dropped, "threshold": threshold}
