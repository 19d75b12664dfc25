"""Which memory rows count, said once: as SQL fragments over a table alias, and as ORM conditions.

- **live**: neither erased (`redacted_at`) nor corrected (`superseded_by`), and
  not a system row. Recall's partial indexes are built on exactly this text,
  so the planner can prove that a query naming it may use them.
- **recallable**: live, and not a promotion tombstone (a row a stance replaced,
  marked by `stance`): what recall and render may show.
- **audience**: `scopes.recallable`, the rows whose scope reaches a place
  (workspace facts, the channel's facts, and in a DM with one person that
  person's facts), and **held or shared**: an agent's own rows and the rows no
  agent holds. Recall selects by both; an agent's reads outside a turn do too.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from memories.scopes import CHANNEL, PERSON, SYSTEM_BUCKET, WORKSPACE, Place, solo_person

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


def _audience(place: Place, include_workspace: bool) -> list[tuple[str, str | None, str | None]]:
    """The scopes that reach `place`, each as (scope, the parameter naming its scope_ref, that ref's value);
    a scope reached whatever its ref has None for both. SQL and the ORM both render this one list."""
    terms: list[tuple[str, str | None, str | None]] = [(WORKSPACE, None, None)] if include_workspace else []
    terms.append((CHANNEL, "channel", place.channel))
    person = solo_person(place)
    if person is not None:
        terms.append((PERSON, "person", person))
    return terms


def audience_sql(place: Place, alias: str = "m", include_workspace: bool = True) -> str:
    """`scopes.recallable` as SQL over `alias` (parameters: channel, person)."""
    return " OR ".join(
        f"{alias}.scope = '{scope}'"
        if parameter is None
        else f"({alias}.scope = '{scope}' AND {alias}.scope_ref = %({parameter})s)"
        for scope, parameter, _ in _audience(place, include_workspace)
    )


def audience_q(place: Place) -> Q:
    """`scopes.recallable` as an ORM condition: the scopes that reach `place`, and never a system row."""
    reached = Q()
    for scope, parameter, value in _audience(place, include_workspace=True):
        reached |= Q(scope=scope) if parameter is None else Q(scope=scope, scope_ref=value)
    return reached & ~Q(bucket=SYSTEM_BUCKET)


def held_or_shared_sql(alias: str = "m") -> str:
    """The agent's own rows and those no agent holds, as SQL over `alias` (parameter: agent)."""
    return f"({alias}.agent_id IS NULL OR {alias}.agent_id = %(agent)s)"


def held_or_shared_q(agent_id) -> Q:
    """The agent's own rows and those no agent holds, as an ORM condition."""
    return Q(agent__isnull=True) | Q(agent_id=agent_id)
