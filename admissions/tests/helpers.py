"""Raw SQL writers that skip the services, to prove what the database itself refuses; the admin log-in."""

from __future__ import annotations

import re
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone
from playwright.sync_api import expect


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


def log_in_to_admin(page, username: str, password: str, *, width: int = 1280) -> None:
    """Log in to the admin in a browser tab at the given width (the stewards' console is checked at 1280 px)."""
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/admin/login/?next=/admin/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/admin/$"))
