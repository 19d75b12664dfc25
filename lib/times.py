"""The range every stored time keeps: 1900–2999, in UTC.

Pure: no Django. The API's fields (`lib.fields`), `Memory.clean()`, the
database's CHECK constraints and the read filters all take the bound from
here, so one rule has one spelling. Python's datetime cannot hold a year
PostgreSQL can (before year 1, after 9999); a time inside this range is safe
for date arithmetic on both sides.
"""

from __future__ import annotations

from datetime import UTC, datetime

FIRST_YEAR, LAST_YEAR = 1900, 2999
DATE_RANGE = "a day from 1900-01-01 to 2999-12-31"
# The bound as SQL literals: times from FIRST (inclusive) to END (exclusive), in UTC.
FIRST_SQL = "'1900-01-01 00:00:00+00'::timestamptz"
END_SQL = "'3000-01-01 00:00:00+00'::timestamptz"


def datetime_range_problem(value: datetime) -> str | None:
    """Why a time is outside 1900–2999 once in UTC, or None.

    A pattern can bound the year as written; an offset can still carry it out
    (`1900-01-01T00:30:00+01:00` is 1899 in UTC), and the database stores UTC.
    """
    year = value.astimezone(UTC).year if value.tzinfo is not None else value.year
    if FIRST_YEAR <= year <= LAST_YEAR:
        return None
    return f"{value.isoformat()} is in {year} in UTC; a time is within {DATE_RANGE} (UTC)."


def in_range_sql(column: str, *, nullable: bool) -> str:
    """`column` within the range, as SQL (NULL passes when `nullable`): what a CHECK and a read filter test."""
    bounded = f"{column} >= {FIRST_SQL} AND {column} < {END_SQL}"
    return f"({column} IS NULL OR ({bounded}))" if nullable else f"({bounded})"
