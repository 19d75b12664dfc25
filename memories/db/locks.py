"""Advisory locks that put writers of existing memory rows in one order.

Subject erasure locks the subject's rows, then the learned rows derived only from the
subject's thread events; consolidation locks the rows its candidates supersede, in the
order of the candidates. Two such transactions in one organisation can each hold a row
the other wants next. Both take this organisation's lock first: consolidations share
it and run side by side, an erasure takes it alone and waits for them (and they for it).
"""

from __future__ import annotations

from django.db import connection

# The first key of the two-key advisory lock: which lock this is ("MR", memory rewrite).
MEMORY_REWRITE = 0x4D52


def memories_rewrite_lock(*, organisation_id, exclusive: bool) -> None:
    """Take the organisation's memory-rewrite lock until the end of the transaction."""
    function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s, hashtext(%s))", [MEMORY_REWRITE, str(organisation_id)])
