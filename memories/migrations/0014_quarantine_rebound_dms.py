"""Person facts written in a DM after it was rebound are quarantined: they are about the wrong person.

Before a DM kept its one person (memories/places.py), a channel could be turned
into a DM from another kind, or a DM given another person; what the first
person said there afterwards was stored as the new person's facts. The place
audit (`memories_placeaudit`) says when: a row whose `kind_to` is `dm` after
another kind, or a `dm` to `dm` row that added or removed someone. The DM's
person from that row until the channel's next audit row is found by replaying
the audit backwards from its members today.

A memory records no channel of its own (a person fact's `scope_ref` is the
person). A fact is taken as said in the channel when its source says so: an
episode's event (`source_event_id`) or a learned fact's source events
(`threads_learningsource`) were in it, or its `source_ref` or `source_label` is
the channel's id. A fact written through the API that names no source cannot
be tied to the channel, and is left as it is.

Each quarantined row is listed: `quarantined memory ID of organisation ID: why`.
Not atomic, like 0012: the quarantine is one transaction of its own.
"""

import json
from dataclasses import dataclass
from datetime import datetime

from django.db import migrations

REASON = "a person fact said in {channel} after it was rebound as a DM (it may be about someone else)"
AUDIT_ROWS = (
    "SELECT a.organisation_id, a.channel_id, c.external_id, a.kind_from, a.kind_to, a.added::text, a.removed::text,"
    " a.at FROM memories_placeaudit a JOIN memories_channel c ON c.id = a.channel_id ORDER BY a.channel_id, a.at, a.id"
)
MEMBERS = "SELECT user_id::text FROM memories_channelmember WHERE channel_id = %s"
SAID_IN_CHANNEL = (
    "(m.source_ref = %(channel)s OR m.source_label = %(channel)s"
    " OR EXISTS (SELECT 1 FROM threads_threadevent e WHERE e.id = m.source_event_id AND e.place_channel = %(channel)s)"
    " OR EXISTS (SELECT 1 FROM threads_learning l JOIN threads_learningsource s ON s.learning_id = l.id"
    " JOIN threads_threadevent e ON e.id = s.event_id WHERE l.memory_id = m.id AND e.place_channel = %(channel)s))"
)
QUARANTINE = (
    "UPDATE memories_memory m SET quarantined_at = coalesce(m.quarantined_at, now()),"
    " quarantine_reason = left(concat_ws('; ', nullif(m.quarantine_reason, ''), %(reason)s), 500)"
    " WHERE m.organisation_id = %(organisation)s AND m.scope = 'person' AND m.scope_ref = %(person)s"
    " AND m.created_at >= %(start)s::timestamptz AND (%(end)s::timestamptz IS NULL OR m.created_at < %(end)s::timestamptz)"
    f" AND {SAID_IN_CHANNEL} RETURNING m.id, m.organisation_id, m.quarantine_reason"
)


@dataclass(frozen=True)
class AuditRow:
    organisation_id: object  # the organisation's primary key, as the database gives it
    channel_id: int
    channel: str
    kind_from: str
    kind_to: str
    added: frozenset[str]
    removed: frozenset[str]
    at: datetime

    @property
    def rebinds(self) -> bool:
        """The row makes the channel a DM from another kind, or gives a DM other people."""
        if self.kind_to != "dm":
            return False
        return self.kind_from not in ("", "dm") or (self.kind_from == "dm" and bool(self.added or self.removed))


@dataclass(frozen=True)
class Rebound:
    """A DM's time bound to a person after a rebind: from `start` until the channel's next change (`end`)."""

    organisation_id: object  # the organisation's primary key, as the database gives it
    channel: str
    person: str
    start: datetime
    end: datetime | None


def rebound_spans(rows: list[AuditRow], members_now: set[str]) -> list[Rebound]:
    """One channel's rebound DMs, from its audit rows in order and its members today, replayed backwards."""
    spans: list[Rebound] = []
    members = set(members_now)
    end: datetime | None = None
    for row in reversed(rows):
        if row.rebinds and len(members) == 1:
            spans.append(Rebound(row.organisation_id, row.channel, next(iter(members)), row.at, end))
        members = (members - row.added) | row.removed
        end = row.at
    return spans


def _audit_rows(cursor) -> dict[int, list[AuditRow]]:
    cursor.execute(AUDIT_ROWS)
    by_channel: dict[int, list[AuditRow]] = {}
    for organisation_id, channel_id, channel, kind_from, kind_to, added, removed, at in cursor.fetchall():
        row = AuditRow(
            organisation_id,
            channel_id,
            channel,
            kind_from,
            kind_to,
            frozenset(str(person) for person in json.loads(added)),
            frozenset(str(person) for person in json.loads(removed)),
            at,
        )
        by_channel.setdefault(channel_id, []).append(row)
    return by_channel


def quarantine(apps, schema_editor, out=print) -> int:
    """Quarantine each person fact said in a rebound DM, each listed: `quarantined memory ID of organisation ID: why`."""
    count = 0
    with schema_editor.connection.cursor() as cursor:
        for channel_id, rows in _audit_rows(cursor).items():
            if not any(row.rebinds for row in rows):
                continue
            cursor.execute(MEMBERS, [channel_id])
            members_now = {person for (person,) in cursor.fetchall()}
            for span in rebound_spans(rows, members_now):
                cursor.execute(
                    QUARANTINE,
                    {
                        "reason": REASON.format(channel=span.channel),
                        "organisation": span.organisation_id,
                        "person": span.person,
                        "start": span.start,
                        "end": span.end,
                        "channel": span.channel,
                    },
                )
                for memory_id, organisation_id, said in cursor.fetchall():
                    out(f"quarantined memory {memory_id} of organisation {organisation_id}: {said}")
                    count += 1
    return count


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0013_erasure_empties_provenance"),
        ("threads", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(quarantine, migrations.RunPython.noop, atomic=True),
    ]
