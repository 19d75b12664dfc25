"""Rows that break the write rules are quarantined, then the rules become CHECK constraints.

The constraints are added `NOT VALID` (new writes are checked at once, and the
table is locked only for a moment), the rows written before them that break
them are listed on standard output and quarantined (`quarantined_at`: kept,
listed to owners, exported and erasable, never recalled or rendered), and
then the constraints are validated. Times outside 1900–2999 in UTC are moved
to the nearest bound, their first value kept in the reason, so the row can be
read at all. Not atomic, so the brief lock of each step ends with it.
"""

import datetime

import django.db.models.functions.comparison
from django.db import migrations, models

FIRST = "'1900-01-01 00:00:00+00'::timestamptz"
END = "'3000-01-01 00:00:00+00'::timestamptz"
LAST = "'2999-12-31 23:59:59+00'::timestamptz"
TIMES = ("created_at", "occurred_at", "valid_from", "valid_until", "expires_at")


def _outside(column: str) -> str:
    return f"({column} < {FIRST} OR {column} >= {END})"


TIMES_IN_RANGE = " AND ".join(
    f"({column} >= {FIRST} AND {column} < {END})"
    if column == "created_at"
    else f"({column} IS NULL OR ({column} >= {FIRST} AND {column} < {END}))"
    for column in TIMES
)
OWN_FACT_ABOUT_ITS_WRITER = (
    "bucket <> 'user' OR subject_type <> 'user' OR (owner_id IS NOT NULL AND subject_id = owner_id::text)"
    " OR quarantined_at IS NOT NULL"
)
LEARNED_NEVER_WORKSPACE = "NOT (scope = 'workspace' AND source_kind = 'thread_event') OR quarantined_at IS NOT NULL"
CONSTRAINTS = {
    "memories_times_in_range": TIMES_IN_RANGE,
    "memories_own_fact_about_its_writer": OWN_FACT_ABOUT_ITS_WRITER,
    "memories_learned_never_workspace": LEARNED_NEVER_WORKSPACE,
}

ADD_NOT_VALID = "\n".join(
    f"ALTER TABLE memories_memory ADD CONSTRAINT {name} CHECK ({condition}) NOT VALID;"
    for name, condition in CONSTRAINTS.items()
)
VALIDATE = "\n".join(f"ALTER TABLE memories_memory VALIDATE CONSTRAINT {name};" for name in CONSTRAINTS)
DROP = "\n".join(f"ALTER TABLE memories_memory DROP CONSTRAINT IF EXISTS {name};" for name in CONSTRAINTS)

_TIMES_NAMED = ", ".join(f"CASE WHEN {_outside(column)} THEN '{column} ' || {column}::text END" for column in TIMES)
# (what the rule is, which rows break it, what else the quarantine sets)
QUARANTINES = (
    (
        "times outside 1900-2999 UTC, moved to the nearest bound; they were: ",
        " OR ".join(_outside(column) for column in TIMES),
        _TIMES_NAMED,
        ", ".join(
            f"{column} = CASE WHEN {column} < {FIRST} THEN {FIRST} WHEN {column} >= {END} THEN {LAST} ELSE {column} END"
            for column in TIMES
        ),
    ),
    (
        "a person's own fact about someone else (subject_id is not its owner)",
        "bucket = 'user' AND subject_type = 'user' AND (owner_id IS NULL OR subject_id <> owner_id::text)",
        "",
        "",
    ),
    (
        "a workspace fact learned from thread events (consolidation keeps them in their place)",
        "scope = 'workspace' AND source_kind = 'thread_event'",
        "",
        "",
    ),
)


def quarantine_statement(reason: str, where: str, detail: str, fix: str) -> str:
    """One rule's quarantine: mark the rows that break it, say why (appended to any earlier reason)."""
    said = f"%s || concat_ws(', ', {detail})" if detail else "%s"
    sets = f", {fix}" if fix else ""
    return (
        "UPDATE memories_memory SET quarantined_at = coalesce(quarantined_at, now()),"
        f" quarantine_reason = left(concat_ws('; ', nullif(quarantine_reason, ''), {said}), 500){sets}"
        f" WHERE {where} RETURNING id, organisation_id, quarantine_reason"
    )


def quarantine(apps, schema_editor, out=print) -> int:
    """Quarantine every row that breaks a rule, each listed: `quarantined memory ID of organisation ID: why`."""
    count = 0
    with schema_editor.connection.cursor() as cursor:
        for reason, where, detail, fix in QUARANTINES:
            cursor.execute(quarantine_statement(reason, where, detail, fix), [reason])
            for memory_id, organisation_id, said in cursor.fetchall():
                out(f"quarantined memory {memory_id} of organisation {organisation_id}: {said}")
                count += 1
    return count


_FROM = datetime.datetime(1900, 1, 1, 0, 0, tzinfo=datetime.UTC)
_UNTIL = datetime.datetime(3000, 1, 1, 0, 0, tzinfo=datetime.UTC)


def _bounded(name: str) -> models.Q:
    return models.Q(
        (f"{name}__isnull", True), models.Q((f"{name}__gte", _FROM), (f"{name}__lt", _UNTIL)), _connector="OR"
    )


STATE = [
    migrations.AddConstraint(
        model_name="memory",
        constraint=models.CheckConstraint(
            condition=models.Q(
                ("created_at__gte", _FROM),
                ("created_at__lt", _UNTIL),
                _bounded("occurred_at"),
                _bounded("valid_from"),
                _bounded("valid_until"),
                _bounded("expires_at"),
            ),
            name="memories_times_in_range",
        ),
    ),
    migrations.AddConstraint(
        model_name="memory",
        constraint=models.CheckConstraint(
            condition=models.Q(
                models.Q(("bucket", "user"), _negated=True),
                models.Q(("subject_type", "user"), _negated=True),
                models.Q(
                    ("owner__isnull", False),
                    (
                        "subject_id",
                        django.db.models.functions.comparison.Cast("owner", output_field=models.CharField()),
                    ),
                ),
                ("quarantined_at__isnull", False),
                _connector="OR",
            ),
            name="memories_own_fact_about_its_writer",
        ),
    ),
    migrations.AddConstraint(
        model_name="memory",
        constraint=models.CheckConstraint(
            condition=models.Q(
                models.Q(("scope", "workspace"), ("source_kind", "thread_event"), _negated=True),
                ("quarantined_at__isnull", False),
                _connector="OR",
            ),
            name="memories_learned_never_workspace",
        ),
    ),
]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0010_word_list_definer_and_model_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="quarantine_reason",
            field=models.CharField(blank=True, db_default="", default="", editable=False, max_length=500),
        ),
        migrations.AddField(
            model_name="memory",
            name="quarantined_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunSQL(ADD_NOT_VALID, DROP, state_operations=STATE),
        migrations.RunPython(quarantine, migrations.RunPython.noop, atomic=True),
        migrations.RunSQL(VALIDATE, migrations.RunSQL.noop),
    ]
