"""Episode parts: where an episode sits in its message and which message's episode is its context."""

import django.db.models.deletion
from django.db import migrations, models


# Row-level security for the parts, frozen as text (what tenancy.sql.protect produced).
PROTECT = """
ALTER TABLE threads_episodepart ENABLE ROW LEVEL SECURITY;
ALTER TABLE threads_episodepart FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON threads_episodepart;
CREATE POLICY archivist_tenant ON threads_episodepart TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON threads_episodepart;
CREATE POLICY archivist_operator ON threads_episodepart TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON threads_episodepart;
CREATE POLICY archivist_maintenance ON threads_episodepart TO archivist_maintenance USING (true) WITH CHECK (true);
"""
UNPROTECT = """
DROP POLICY IF EXISTS archivist_tenant ON threads_episodepart;
DROP POLICY IF EXISTS archivist_operator ON threads_episodepart;
DROP POLICY IF EXISTS archivist_maintenance ON threads_episodepart;
ALTER TABLE threads_episodepart NO FORCE ROW LEVEL SECURITY;
ALTER TABLE threads_episodepart DISABLE ROW LEVEL SECURITY;
"""

# Episodes kept before parts were recorded: one message per event, its live episodes numbered in the order
# their words come in the event (the text after the speaker's `Name: `, by its first 40 characters), then as
# written. Their context links start empty; episodes consolidated from now on get theirs.
BACKFILL = """
INSERT INTO threads_episodepart (organisation_id, memory_id, thread_id, message, part, parts)
SELECT m.organisation_id, m.id, e.thread_id, e.sequence,
  row_number() OVER (PARTITION BY e.id
    ORDER BY position(left(substr(m.body, strpos(m.body, ': ') + 2), 40) IN e.text), m.created_at, m.id),
  count(*) OVER (PARTITION BY e.id)
FROM memories_memory m JOIN threads_threadevent e ON e.id = m.source_event_id
WHERE m.source_kind = 'episode' AND m.redacted_at IS NULL AND e.erased_at IS NULL;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_remove_organisation_has_threads"),
        ("memories", "0015_halfvec_embeddings"),
        ("threads", "0004_drop_organisation_mark"),
        ("tenancy", "0003_consolidation_backlog"),
    ]

    operations = [
        migrations.CreateModel(
            name="EpisodePart",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("message", models.PositiveBigIntegerField(help_text="The sequence of the message's first event.")),
                ("part", models.PositiveIntegerField(help_text="This episode's number within its message, from 1.")),
                ("parts", models.PositiveIntegerField(help_text="How many episodes the message became.")),
                (
                    "context",
                    models.ForeignKey(
                        blank=True,
                        help_text="The linked message's episode: the question an answer's part answers, or a question's answer.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="memories.memory",
                    ),
                ),
                (
                    "memory",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="episode_part", to="memories.memory"
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="accounts.organisation"
                    ),
                ),
                (
                    "thread",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="threads.thread"
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        condition=models.Q(("part", models.F("parts"))),
                        fields=["organisation", "thread", "message"],
                        name="threads_part_last_idx",
                    ),
                    models.Index(
                        condition=models.Q(("part", 1)),
                        fields=["organisation", "thread", "message"],
                        name="threads_part_first_idx",
                    ),
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("organisation", "thread", "message", "part"), name="threads_episode_part_unique"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("part__gte", 1), ("part__lte", models.F("parts"))),
                        name="threads_episode_part_within_parts",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("context", models.F("memory")), _negated=True),
                        name="threads_episode_part_context_is_another",
                    ),
                ],
            },
        ),
        migrations.RunSQL(PROTECT, UNPROTECT),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
