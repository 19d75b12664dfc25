"""Which memory rows count, said once: as SQL fragments over a table alias, and as ORM conditions.

- **live**: neither erased (`redacted_at`) nor corrected (`superseded_by`), and
  not a system row. Recall's partial indexes are built on exactly this text,
  so the planner can prove that a query naming it may use them.
- **recallable**: live, and not a promotion tombstone (a row a stance replaced,
  marked by `stance`): what recall and render may show.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

_LIVE_TERMS = ("redacted_at IS NULL", "superseded_by_id IS NULL", "bucket <> 'system'")
_NOT_TOMBSTONE_TERM = "stance IS NULL"


def _joined(terms: tuple[str, ...], alias: str) -> str:
    prefix = f"{alias}." if alias else ""
    return " AND ".join(prefix + term for term in terms)


def live_sql(alias: str = "") -> str:
    """`redacted_at IS NULL AND superseded_by_id IS NULL AND bucket <> 'system'`, each column under `alias`."""
    return _joined(_LIVE_TERMS, alias)


def recallable_sql(alias: str = "") -> str:
    """The live predicate and no promotion tombstone, each column under `alias`."""
    return _joined((*_LIVE_TERMS, _NOT_TOMBSTONE_TERM), alias)


def current_q() -> Q:
    """Neither erased nor corrected: the current version of a memory, of any bucket."""
    return Q(redacted_at__isnull=True, superseded_by__isnull=True)


def live_q() -> Q:
    """The live predicate as an ORM condition."""
    return current_q() & ~Q(bucket="system")


def unexpired_q(now: datetime) -> Q:
    """Not expired at `now` (a row without an expiry never is)."""
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now)
