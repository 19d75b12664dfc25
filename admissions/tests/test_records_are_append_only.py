"""The database keeps admission records as receipts: never changed, never deleted,
and never written where the rules say no, even by SQL that skips the services."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from admissions.models import AdmissionRecord
from admissions.services import admission_decide

from .helpers import raw_record


@pytest.fixture
def record(claim, steward):
    return admission_decide(claim=claim, steward=steward, decision="admit", reason="Matches the published rate")


def _execute(sql, params=()):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_a_raw_update_of_a_record_is_refused(record):
    with pytest.raises(IntegrityError, match="admissions_append_only"):
        _execute("UPDATE admissions_admissionrecord SET decision = 'reject' WHERE id = %s", [record.pk])
    with pytest.raises(IntegrityError, match="admissions_append_only"):
        _execute("UPDATE admissions_admissionrecord SET reason = 'rewritten' WHERE id = %s", [record.pk])
    record.refresh_from_db()
    assert (record.decision, record.reason) == ("admit", "Matches the published rate")


def test_a_raw_delete_of_a_record_is_refused(record):
    with pytest.raises(IntegrityError, match="admissions_append_only"):
        _execute("DELETE FROM admissions_admissionrecord WHERE id = %s", [record.pk])
    assert AdmissionRecord.objects.filter(pk=record.pk).exists()


def test_the_orm_cannot_delete_or_save_over_a_record_either(record):
    with pytest.raises(IntegrityError, match="admissions_append_only"), transaction.atomic():
        record.delete()
    record.reason = "changed"
    with pytest.raises(IntegrityError, match="admissions_append_only"), transaction.atomic():
        record.save()


def test_a_raw_record_by_the_claims_author_is_refused(make_claim, steward):
    own = make_claim(user=steward)
    for decision in ("admit", "reject", "challenge", "revoke"):
        with pytest.raises(IntegrityError, match="admissions_four_eyes"):
            raw_record(claim=own, steward=steward, decision=decision)
    assert not AdmissionRecord.objects.exists()


def test_a_raw_record_by_someone_who_is_not_a_steward_is_refused(claim, owner):
    with pytest.raises(IntegrityError, match="admissions_steward_only"):
        raw_record(claim=claim, steward=owner)


def test_a_raw_record_must_carry_its_claims_organisation(claim, steward, other_org):
    with pytest.raises(IntegrityError, match="admissions_claim_organisation"):
        raw_record(claim=claim, steward=steward, organisation_id=other_org.pk)


def test_a_raw_record_on_a_memory_that_is_not_a_system_claim_is_refused(make_memory, steward):
    with pytest.raises(IntegrityError, match="admissions_system_only"):
        raw_record(claim=make_memory(), steward=steward)


@pytest.mark.parametrize("reason", ["", "   ", "x" * 2001])
def test_a_raw_record_without_a_reason_or_with_too_long_a_reason_is_refused(claim, steward, reason):
    with pytest.raises(IntegrityError, match="admissions_reason_required"):
        raw_record(claim=claim, steward=steward, reason=reason)


def test_a_raw_promotion_without_its_stance_and_tombstone_is_refused(claim, steward):
    with pytest.raises(IntegrityError, match="admissions_promotion_(shape|tombstone)"):
        raw_record(claim=claim, steward=steward, decision="promote")


def test_an_unknown_decision_is_refused(claim, steward):
    with pytest.raises(IntegrityError, match="admissions_decision_valid"):
        raw_record(claim=claim, steward=steward, decision="approve")
