"""A claim's derived status, computed in SQL so lists, filters and counts over many claims stay one query."""

# The rule, held by the view `admissions_claim_status` (admissions/sql.py):
# - a promotion tombstone (a row with a stance) is `tombstone`, whatever its records say;
# - otherwise the latest effective record decides: admit -> admitted, reject -> rejected,
#   challenge or revoke -> challenged (a candidate again, kept apart);
# - with no effective record the claim is a `candidate`.
#
# A record is effective when it is a status decision and its steward is not the
# claim's author. The database already refuses an author's record
# (`admissions_four_eyes`); the view ignores them as well, so a status can never
# be read off one, even a row written while that trigger was disabled.
# The `admission` column the author filled in is never read.

from __future__ import annotations

from django.db.models import F, QuerySet


def with_status(queryset: QuerySet) -> QuerySet:
    """Annotate memories with `derived_status` and `status_rank` (candidates 0 ... tombstones 4).

    One LEFT JOIN onto the view: a single query however many claims are listed.
    """
    return queryset.annotate(
        derived_status=F("admission_status__status"),
        status_rank=F("admission_status__rank"),
        decided_at=F("admission_status__decided_at"),
    )
