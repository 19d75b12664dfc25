"""Stewards' decisions on system claims (built out in the admissions issue)."""
