"""The stewards' console: the queue of system claims, the claim page, decisions, promotion, stances and the audit."""

# Django's autodiscover imports this package; importing each module registers its screens.
from admissions.admin import claims, records, stances

__all__ = ["claims", "records", "stances"]
