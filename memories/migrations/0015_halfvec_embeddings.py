"""Embeddings are stored as `halfvec(384)`: half the table and index size, for the same ranked results.

Existing rows convert in place (`ALTER COLUMN ... USING embedding::halfvec(384)`),
which also rebuilds the covering index that carries the vectors. The per-organisation
partial HNSW indexes name an operator class of the old type, so each is read back
(`pg_get_indexdef`), dropped, and built again with `halfvec_cosine_ops` under the same
name and predicate: recall keeps using them as soon as the conversion commits. The
table is rewritten under an exclusive lock, so writes and recall wait meanwhile
(docs/deploying.md, "Upgrades", says how long at what size).

`halfvec` needs pgvector 0.7 or newer: on an older one the migration refuses before
changing anything and says what to do. Reversible (back to `vector(384)`).
"""

import re

from django.conf import settings
from django.core.management.base import CommandError
from django.db import migrations, transaction
from pgvector.django import HalfVectorField

HALFVEC_SINCE = (0, 7)
TENANT_INDEXES = (
    "SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
    " WHERE i.indrelid = 'memories_memory'::regclass AND c.relname LIKE 'memories\\_hnsw\\_%'"
)


def halfvec_refusal(version: str | None) -> str | None:
    """Why this pgvector (its `extversion`, None when not installed) cannot store halfvec, or None if it can."""
    found = tuple(int(part) for part in re.findall(r"\d+", version or "")[:2])
    if found >= HALFVEC_SINCE:
        return None
    return (
        f"Archivist stores embeddings as halfvec, which needs pgvector 0.7 or newer; this database has "
        f"pgvector {version or '(none)'}. Install pgvector 0.7 or newer on the server, run "
        "`ALTER EXTENSION vector UPDATE;` in this database as its owner, then migrate again."
    )


def require_halfvec(cursor) -> None:
    cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    row = cursor.fetchone()
    refusal = halfvec_refusal(row[0] if row else None)
    if refusal:
        raise CommandError(refusal)  # printed as it is, without a traceback


def convert(schema_editor, *, to_type: str, from_ops: str, to_ops: str, check=None) -> None:
    """Change the column's type in one transaction, rebuilding each organisation's HNSW index with the new type's
    operator class; then VACUUM ANALYZE, since the rewritten table's pages are not yet marked all-visible and
    the covering index's index-only scans would read the heap for every row until they are."""
    connection = schema_editor.connection
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        if check:
            check(cursor)
        cursor.execute(TENANT_INDEXES)
        definitions = cursor.fetchall()
        for name, _ in definitions:
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute(f"ALTER TABLE memories_memory ALTER COLUMN embedding TYPE {to_type} USING embedding::{to_type}")
        if definitions:
            memory = int(getattr(settings, "MEMORY_VECTOR_BUILD_MEMORY_MB", 256))
            cursor.execute(f"SET LOCAL maintenance_work_mem = '{memory}MB'")
        for _, definition in definitions:
            cursor.execute(definition.replace(from_ops, to_ops))
    if not connection.in_atomic_block:  # a test's transaction cannot vacuum; its table is small anyway
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE memories_memory")


def to_halfvec(apps, schema_editor) -> None:
    convert(
        schema_editor,
        to_type="halfvec(384)",
        from_ops="vector_cosine_ops",
        to_ops="halfvec_cosine_ops",
        check=require_halfvec,
    )


def to_vector(apps, schema_editor) -> None:
    convert(schema_editor, to_type="vector(384)", from_ops="halfvec_cosine_ops", to_ops="vector_cosine_ops")


class Migration(migrations.Migration):
    atomic = False  # VACUUM cannot run in a transaction; the conversion itself is one (`convert`)
    dependencies = [("memories", "0014_quarantine_rebound_dms")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(to_halfvec, to_vector)],
            state_operations=[
                migrations.AlterField(
                    model_name="memory",
                    name="embedding",
                    field=HalfVectorField(blank=True, dimensions=384, null=True),
                )
            ],
        )
    ]
