"""The stewards' access: the steward role grants the admin and exactly these permissions.

A steward gets `is_staff` (to reach the admin at all) and membership of the
`Stewards` group, which carries the permissions below and nothing else: they
can view claims, records and stances, decide claims, create, revise and retire stances, and
never change or delete a row through the admin. The role on the membership is
the source of truth; `steward_access_sync` follows it whenever it changes.
"""

from __future__ import annotations

STEWARDS_GROUP = "Stewards"

# (app_label, codename)
STEWARD_PERMISSIONS = (
    ("admissions", "view_systemclaim"),
    ("admissions", "decide_claim"),
    ("admissions", "submit_claim"),
    ("admissions", "view_admissionrecord"),
    ("admissions", "view_stance"),
    ("admissions", "add_stance"),
    ("admissions", "manage_stance"),
)
