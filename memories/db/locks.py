"""Advisory locks that put writers of memory rows in one order."""

# A writer's live-fact cap: two writes at the cap would both count 1,999, so every write that counts toward a
# cap first takes its writer's transaction-scoped lock (`LIVE_CAP_LOCK`), which serialises them without
# locking any row another writer needs (no deadlock with ingest). The count must be a statement after the
# lock's (under READ COMMITTED each statement sees what committed before it began).
#
# Subject erasure locks the subject's rows, then the learned rows derived only from the
# subject's thread events; consolidation locks the rows its candidates supersede, in the
# order of the candidates. Two such transactions in one organisation can each hold a row
# the other wants next. Both take this organisation's lock first: consolidations share
# it and run side by side, an erasure takes it alone and waits for them (and they for it).

from __future__ import annotations

from django.db import connection

# The first key of the two-key advisory lock: which lock this is ("MR", memory rewrite).
MEMORY_REWRITE = 0x4D52


def memories_rewrite_lock(*, organisation_id, exclusive: bool) -> None:
    """Take the organisation's memory-rewrite lock until the end of the transaction."""
    function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s, hashtext(%s))", [MEMORY_REWRITE, str(organisation_id)])


# Held until the end of the transaction; its one parameter is `live_cap_lock_key`.
LIVE_CAP_LOCK = "SELECT pg_advisory_xact_lock(hashtext(%s))"


def live_cap_lock_key(*, kind: str, writer_id) -> str:
    """The lock of one writer's live-fact cap: `kind` is agent or person."""
    return f"memories.live-cap:{kind}:{writer_id}"
