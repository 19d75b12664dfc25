"""Row-level security on every table holding tenant data (tenancy/sql.py says why and how).

Runs after the tables exist; a table added later is covered by calling
`tenancy.sql.protect(table)` from its own app's migration.
"""

from django.db import migrations

from tenancy import sql


# Frozen: the tables this migration protected when it was written. Later tables are
# protected by their own migrations, so `sql.PROTECTED_TABLES` may grow without changing this one.
TABLES = (
    "memories_memory",
    "memories_channel",
    "memories_channelmember",
    "memories_memoryaudit",
    "memories_injection",
    "memories_injectionline",
    "memories_idempotencykey",
    "memories_tenantvectorindex",
    "admissions_admissionrecord",
    "accounts_agenttoken",
    "threads_thread",
    "threads_threadevent",
    "threads_learning",
    "threads_learningsource",
)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("memories", "0002_turn_api"),
        ("admissions", "0002_stewards_group"),
    ]

    operations = [
        migrations.RunSQL(sql.ROLES, sql.UNDO_ROLES),
        migrations.RunSQL(sql.FUNCTIONS, sql.UNDO_FUNCTIONS),
        *[migrations.RunSQL(sql.protect(table), sql.unprotect(table)) for table in TABLES],
        migrations.RunSQL(sql.EXCEPTIONS, sql.UNDO_EXCEPTIONS),
    ]
