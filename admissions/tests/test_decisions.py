"""Deciding a claim through the service: who may, from which status, and what the status becomes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from admissions.models import AdmissionRecord, SystemClaim
from admissions.services import DecisionRefused, admission_decide
from admissions.status import with_status


def status(claim) -> str:
    return with_status(SystemClaim.objects.filter(pk=claim.pk)).get().derived_status


def test_a_new_claim_is_a_candidate(claim):
    assert status(claim) == "candidate"


def test_a_claim_whose_author_says_admitted_still_reads_as_candidate(make_claim):
    claim = make_claim(admission="admitted")
    assert claim.admission == "admitted"
    assert status(claim) == "candidate"


def test_a_steward_admits_and_the_claim_reads_admitted(claim, steward):
    record = admission_decide(claim=claim, steward=steward, decision="admit", reason="Matches the source")
    assert (record.organisation_id, record.claim_id, record.steward_id) == (claim.organisation_id, claim.pk, steward.pk)
    assert status(claim) == "admitted"


def test_a_steward_of_another_organisation_may_decide(claim, foreign_steward):
    admission_decide(claim=claim, steward=foreign_steward, decision="reject", reason="The source says otherwise")
    assert status(claim) == "rejected"


def test_the_author_cannot_decide_their_own_claim_even_as_a_steward(make_claim, steward):
    own = make_claim(user=steward)
    for decision in ("admit", "reject", "challenge"):
        with pytest.raises(DecisionRefused) as refused:
            admission_decide(claim=own, steward=steward, decision=decision, reason="mine")
        assert refused.value.refusal == DecisionRefused.OWN_CLAIM
    assert not AdmissionRecord.objects.exists()
    assert status(own) == "candidate"


def test_an_agents_claim_can_be_admitted_by_any_steward(make_claim, agent, steward):
    claim = make_claim(agent=agent)
    assert claim.written_by_id is None
    admission_decide(claim=claim, steward=steward, decision="admit", reason="ok")
    assert status(claim) == "admitted"


@pytest.mark.parametrize("persona", ["owner", "member", "outsider"])
def test_someone_who_is_not_a_steward_cannot_decide(claim, persona, request):
    user = request.getfixturevalue(persona)
    with pytest.raises(PermissionDenied):
        admission_decide(claim=claim, steward=user, decision="admit", reason="ok")
    assert not AdmissionRecord.objects.exists()


@pytest.mark.parametrize("reason", ["", "   ", "x" * 2001])
def test_a_decision_needs_a_reason_within_the_limit(claim, steward, reason):
    with pytest.raises(ValidationError) as error:
        admission_decide(claim=claim, steward=steward, decision="admit", reason=reason)
    assert "reason" in error.value.message_dict
    assert not AdmissionRecord.objects.exists()


def test_a_challenge_sends_an_admitted_claim_back_kept_apart_as_challenged(claim, steward, foreign_steward):
    admission_decide(claim=claim, steward=steward, decision="admit", reason="ok")
    admission_decide(claim=claim, steward=foreign_steward, decision="challenge", reason="New figures")
    assert status(claim) == "challenged"
    admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="Rechecked")
    assert status(claim) == "admitted"


def test_a_revoke_withdraws_an_admission(claim, steward):
    admission_decide(claim=claim, steward=steward, decision="admit", reason="ok")
    admission_decide(claim=claim, steward=steward, decision="revoke", reason="Admitted in error")
    assert status(claim) == "challenged"


@pytest.mark.parametrize(
    ("history", "decision"),
    [
        ([], "revoke"),
        (["admit"], "admit"),
        (["reject"], "admit"),
        (["reject"], "reject"),
        (["challenge"], "challenge"),
    ],
)
def test_a_decision_that_does_not_apply_to_the_current_status_is_refused(claim, steward, history, decision):
    for earlier in history:
        admission_decide(claim=claim, steward=steward, decision=earlier, reason="earlier")
    before = status(claim)
    with pytest.raises(DecisionRefused) as refused:
        admission_decide(claim=claim, steward=steward, decision=decision, reason="again")
    assert refused.value.refusal == DecisionRefused.TRANSITION
    assert status(claim) == before


def test_a_rejected_claim_reopens_only_through_a_challenge(claim, steward):
    admission_decide(claim=claim, steward=steward, decision="reject", reason="Wrong")
    admission_decide(claim=claim, steward=steward, decision="challenge", reason="Source updated")
    admission_decide(claim=claim, steward=steward, decision="admit", reason="Now right")
    assert status(claim) == "admitted"


def test_the_latest_record_decides_by_time_not_by_insert_order(claim, steward):
    now = timezone.now()
    admission_decide(claim=claim, steward=steward, decision="admit", reason="ok", now=now)
    admission_decide(claim=claim, steward=steward, decision="challenge", reason="hm", now=now + timedelta(minutes=1))
    assert status(claim) == "challenged"
    assert with_status(SystemClaim.objects.filter(pk=claim.pk)).get().decided_at == now + timedelta(minutes=1)


def test_a_memory_that_is_not_a_system_claim_cannot_be_decided(make_memory, steward):
    with pytest.raises(DecisionRefused) as refused:
        admission_decide(claim=make_memory(), steward=steward, decision="admit", reason="ok")
    assert refused.value.refusal == DecisionRefused.NOT_A_CLAIM


def test_an_unknown_decision_names_the_field(claim, steward):
    with pytest.raises(ValidationError) as error:
        admission_decide(claim=claim, steward=steward, decision="promote", reason="ok")
    assert "decision" in error.value.message_dict
