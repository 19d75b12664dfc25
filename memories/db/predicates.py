"""Which memory rows count, said once: as SQL fragments over a table alias, and as ORM conditions."""

# - **live**: neither erased (`redacted_at`) nor corrected (`superseded_by`), and
#   not a system row. Recall's partial indexes are built on exactly this text,
#   so the planner can prove that a query naming it may use them.
# - **recallable**: live, and not a promotion tombstone (a row a stance replaced,
#   marked by `stance`): what recall and render may show.
# - **readable**: every bounded time within 1900–2999 (`lib.times`), as the
#   database's `memories_times_in_range` holds; a row past it (written around
#   the constraint) would fail to load, so reads skip it rather than answer 500.
# - **shown in a turn**: readable and not quarantined (a row kept from before a
#   write rule held, see migration 0012). Recall and render test it on the rows
#   they return, after the indexes have chosen them, so no index changes.
# - **audience**: `scopes.recallable`, the rows whose scope reaches a place
#   (workspace facts, the channel's facts, and in a DM with one person that
#   person's facts), and **held or shared**: an agent's own rows and the rows no
#   agent holds. Recall selects by both; an agent's reads outside a turn do too.

from __future__ import annotations

from datetime import UTC, datetime

from django.db.models import Q

from lib.times import in_range_sql
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


# Times a writer gives or the store derives from them, each bounded (`lib.times`); created_at is never NULL.
BOUNDED_TIMES = ("created_at", "occurred_at", "valid_from", "valid_until", "expires_at")
# The times a recall or render row carries (`memories.recall.candidates.RESULT_COLUMNS`).
TURN_TIMES = ("created_at", "occurred_at", "expires_at")
TIMES_FROM = datetime(1900, 1, 1, tzinfo=UTC)
TIMES_UNTIL = datetime(3000, 1, 1, tzinfo=UTC)


def times_in_range_q() -> Q:
    """Every bounded time of a row within the range, as an ORM condition (the CHECK's and reads' rule)."""
    condition = Q(created_at__gte=TIMES_FROM, created_at__lt=TIMES_UNTIL)
    for name in BOUNDED_TIMES[1:]:
        condition &= Q(**{f"{name}__isnull": True}) | Q(**{f"{name}__gte": TIMES_FROM, f"{name}__lt": TIMES_UNTIL})
    return condition


def readable_sql(alias: str = "", columns: tuple[str, ...] = BOUNDED_TIMES) -> str:
    """`times_in_range_q` as SQL over `alias`, for `columns` (by default every bounded time)."""
    prefix = f"{alias}." if alias else ""
    return " AND ".join(in_range_sql(prefix + name, nullable=name != "created_at") for name in columns)


def shown_in_turn_sql(alias: str = "") -> str:
    """The times a recall or render row loads readable, and not quarantined: what a turn may be shown of the rows
    it chose (the other bounded times are never loaded there, so they are not tested on the hot path)."""
    prefix = f"{alias}." if alias else ""
    return f"{readable_sql(alias, TURN_TIMES)} AND {prefix}quarantined_at IS NULL"


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
