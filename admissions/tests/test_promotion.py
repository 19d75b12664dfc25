"""Promoting an admitted claim to a stance: one transaction writes the tombstone,
points the claim at it and records the decision; a tombstone is never decided."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection

from admissions.models import AdmissionRecord, Stance, SystemClaim
from admissions.services import DecisionRefused, admission_decide, claim_promote, stance_create
from admissions.status import with_status
from memories.models import Memory, MemoryAudit

from .helpers import raw_record


@pytest.fixture
def stance(steward):
    return stance_create(
        id="uk-interest-rates", title="UK interest rates", body="What the base rate is and why.", reviewed_by=steward
    )


@pytest.fixture
def admitted(claim, foreign_steward):
    admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="Matches the source")
    return claim


def test_promotion_writes_a_tombstone_naming_the_stance_with_the_evidence(admitted, steward, stance):
    tombstone, record = claim_promote(claim=admitted, steward=steward, stance=stance, reason="Belongs in the KB")
    tombstone.refresh_from_db()
    admitted.refresh_from_db()
    assert tombstone.bucket == "system" and tombstone.stance == "uk-interest-rates" and tombstone.promoted
    assert "uk-interest-rates" in tombstone.body
    assert tombstone.evidence_refs == admitted.evidence_refs
    assert (tombstone.slug, tombstone.entity, tombstone.organisation_id) == (
        admitted.slug,
        admitted.entity,
        admitted.organisation_id,
    )
    assert admitted.superseded_by_id == tombstone.pk and admitted.valid_until is not None
    assert (record.decision, record.stance_id, record.tombstone_id) == ("promote", stance.pk, tombstone.pk)
    assert MemoryAudit.objects.filter(memory=admitted, action="supersede", actor=steward).exists()


def test_a_promoted_claim_stays_admitted_and_its_tombstone_reads_tombstone(admitted, steward, stance):
    tombstone, _ = claim_promote(claim=admitted, steward=steward, stance=stance, reason="KB")
    statuses = dict(with_status(SystemClaim.objects.all()).values_list("pk", "derived_status"))
    assert statuses == {admitted.pk: "admitted", tombstone.pk: "tombstone"}


@pytest.mark.parametrize("decision", ["admit", "reject", "challenge", "revoke"])
def test_a_tombstone_cannot_be_decided_by_the_service_or_by_raw_sql(
    admitted, steward, foreign_steward, stance, decision
):
    tombstone, _ = claim_promote(claim=admitted, steward=steward, stance=stance, reason="KB")
    with pytest.raises(DecisionRefused) as refused:
        admission_decide(claim=tombstone, steward=foreign_steward, decision=decision, reason="try")
    assert refused.value.refusal == DecisionRefused.TOMBSTONE
    with pytest.raises(IntegrityError, match="admissions_no_tombstone"):
        raw_record(claim=tombstone, steward=foreign_steward, decision=decision)
    assert not AdmissionRecord.objects.filter(claim=tombstone).exists()


@pytest.mark.parametrize("history", [[], ["reject"], ["admit", "challenge"]])
def test_only_an_admitted_claim_is_promoted(claim, foreign_steward, steward, stance, history):
    for decision in history:
        admission_decide(claim=claim, steward=foreign_steward, decision=decision, reason="earlier")
    with pytest.raises(DecisionRefused) as refused:
        claim_promote(claim=claim, steward=steward, stance=stance, reason="KB")
    assert refused.value.refusal == DecisionRefused.TRANSITION
    assert not Memory.objects.filter(stance__isnull=False).exists()


def test_a_claim_is_promoted_once(admitted, steward, stance):
    claim_promote(claim=admitted, steward=steward, stance=stance, reason="KB")
    with pytest.raises(DecisionRefused) as refused:
        claim_promote(claim=admitted, steward=steward, stance=stance, reason="again")
    assert refused.value.refusal == DecisionRefused.SUPERSEDED
    assert Memory.objects.filter(stance__isnull=False).count() == 1


def test_the_author_cannot_promote_their_own_claim(make_claim, steward, foreign_steward, stance):
    own = make_claim(user=steward)
    admission_decide(claim=own, steward=foreign_steward, decision="admit", reason="ok")
    with pytest.raises(DecisionRefused):
        claim_promote(claim=own, steward=steward, stance=stance, reason="mine")


def test_a_non_steward_cannot_promote(admitted, owner, stance):
    with pytest.raises(PermissionDenied):
        claim_promote(claim=admitted, steward=owner, stance=stance, reason="KB")


def test_promotion_is_all_or_nothing(admitted, steward, stance):
    # A real failure at the last step (the record insert) must take the
    # tombstone and the supersede pointer with it.
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION pg_temp.fail_promotion() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN RAISE EXCEPTION 'injected failure' USING ERRCODE = '23514'; END $$;"
            " CREATE TRIGGER fail_promotion BEFORE INSERT ON admissions_admissionrecord"
            " FOR EACH ROW WHEN (NEW.decision = 'promote') EXECUTE FUNCTION pg_temp.fail_promotion();"
        )
    with pytest.raises(IntegrityError, match="injected failure"):
        claim_promote(claim=admitted, steward=steward, stance=stance, reason="KB")
    admitted.refresh_from_db()
    assert admitted.superseded_by_id is None
    assert not Memory.objects.filter(stance__isnull=False).exists()
    assert not AdmissionRecord.objects.filter(decision="promote").exists()


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        (dict(id="UK Rates"), "id"),
        (dict(id="uk--rates"), "id"),
        (dict(title="  "), "title"),
        (dict(body=""), "body"),
    ],
)
def test_a_stance_is_refused_with_the_field_named(steward, fields, field):
    values = dict(id="uk-rates", title="UK rates", body="Body") | fields
    with pytest.raises(ValidationError) as error:
        stance_create(reviewed_by=steward, **values)
    assert field in error.value.message_dict
    assert not Stance.objects.exists()


def test_a_stance_id_is_refused_by_the_database_too(steward):
    with pytest.raises(IntegrityError, match="admissions_stance_shape"):
        Stance.objects.create(id="Not A Slug", title="t", body="b", reviewed_by=steward)


def test_creating_a_stance_that_exists_says_to_pick_it(stance, steward):
    with pytest.raises(ValidationError) as error:
        stance_create(id=stance.id, title="Again", body="Again", reviewed_by=steward)
    assert "id" in error.value.message_dict


def test_only_a_steward_reviews_a_stance(member):
    with pytest.raises(PermissionDenied):
        stance_create(id="x", title="x", body="x", reviewed_by=member)
