"""Raw SQL writers that skip the services, to prove what the database itself refuses."""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone


def raw_record(*, claim, steward, decision="admit", reason="checked", organisation_id=None, at: datetime | None = None):
    """Insert an admission record straight into the table; returns its id."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO admissions_admissionrecord (organisation_id, claim_id, decision, steward_id, reason, at)"
            " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
            [
                str(organisation_id or claim.organisation_id),
                str(claim.pk),
                decision,
                str(steward.pk),
                reason,
                at or timezone.now(),
            ],
        )
        return cursor.fetchone()[0]


def status_of(claim) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT status FROM admissions_claim_status WHERE claim_id = %s", [str(claim.pk)])
        return cursor.fetchone()[0]
