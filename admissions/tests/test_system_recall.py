"""System recall: admitted, live, fresh claims only, behind a flag that is off by default and an opt-in."""

from __future__ import annotations

from datetime import date, timedelta
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.db import IntegrityError, connection
from django.test import override_settings

from admissions.models import StanceVersion, SystemClaim
from admissions.services import admission_decide, claim_promote, stance_create
from admissions.system_recall import eligible_claims, system_recall, system_recall_section
from memories.services import memory_redact

from .helpers import raw_record

TODAY = date(2026, 11, 20)


@pytest.fixture
def reader(other_org):
    """Another organisation that opted in: system recall is network-wide."""
    other_org.system_recall_opt_in = True
    other_org.save()
    return other_org


@pytest.fixture
def admit(foreign_steward):
    def admit(claim):
        admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="Checked")
        return claim

    return admit


def principal_of(organisation):
    """What the render hands a provider: it reads only the principal's organisation."""
    return SimpleNamespace(organisation=organisation)


def recalled(organisation, today=TODAY) -> list[str]:
    return [getattr(item, "body", None) or item.text for item in system_recall(organisation=organisation, today=today)]


def recalled_claims(organisation, today=TODAY) -> list:
    return [item for item in system_recall(organisation=organisation, today=today) if isinstance(item, SystemClaim)]


def test_system_recall_is_off_by_default(make_claim, admit, reader):
    assert settings.SYSTEM_RECALL_ENABLED is False
    admit(make_claim(as_of=TODAY))
    assert recalled(reader) == []
    assert system_recall_section(principal_of(reader), None, TODAY) is None


@override_settings(SYSTEM_RECALL_ENABLED=True)
def test_it_needs_the_organisations_opt_in_too(make_claim, admit, org):
    admit(make_claim(as_of=TODAY))
    assert org.system_recall_opt_in is False
    assert recalled(org) == []


@override_settings(SYSTEM_RECALL_ENABLED=True)
def test_with_both_switches_an_admitted_fresh_claim_is_recalled_across_organisations(make_claim, admit, reader):
    admit(make_claim(body="Admitted claim", as_of=TODAY))
    make_claim(body="Candidate claim", as_of=TODAY)
    make_claim(body="Says admitted", as_of=TODAY, admission="admitted")
    assert recalled(reader) == ["Admitted claim"]


@override_settings(SYSTEM_RECALL_ENABLED=True)
@pytest.mark.parametrize(("later", "shown"), [([], True), (["challenge"], False), (["revoke"], False)])
def test_a_challenge_or_revoke_takes_a_claim_out(make_claim, admit, reader, steward, later, shown):
    claim = admit(make_claim(as_of=TODAY))
    for decision in later:
        admission_decide(claim=claim, steward=steward, decision=decision, reason="Doubt")
    assert bool(recalled(reader)) is shown


@override_settings(SYSTEM_RECALL_ENABLED=True)
def test_a_rejected_or_erased_claim_is_not_recalled(make_claim, admit, reader, steward, member):
    rejected = make_claim(body="Rejected", as_of=TODAY)
    admission_decide(claim=rejected, steward=steward, decision="reject", reason="Wrong")
    erased = admit(make_claim(body="Erased", as_of=TODAY))
    memory_redact(memory=erased, reason="Asked", actor=member)
    assert recalled(reader) == []


@override_settings(SYSTEM_RECALL_ENABLED=True, SYSTEM_RECALL_FRESHNESS_DAYS=30)
def test_only_claims_within_the_freshness_window_before_the_cutoff_are_recalled(make_claim, admit, reader):
    admit(make_claim(body="Edge of the window", as_of=TODAY - timedelta(days=30)))
    admit(make_claim(body="A day too old", as_of=TODAY - timedelta(days=31)))
    admit(make_claim(body="Fresh", as_of=TODAY - timedelta(days=1)))
    assert recalled(reader) == ["Fresh", "Edge of the window"]
    # The window is measured back from the cutoff (so a replay sees what the turn
    # saw), and a claim as of a day after the cutoff is not yet recallable.
    assert recalled(reader, today=TODAY - timedelta(days=2)) == ["Edge of the window", "A day too old"]


@override_settings(SYSTEM_RECALL_ENABLED=True)
def test_a_promoted_claim_and_its_tombstone_are_never_recalled_as_claims(
    make_claim, admit, reader, steward, foreign_steward
):
    claim = admit(make_claim(as_of=TODAY))
    stance = stance_create(id="uk-rates", title="UK rates", body="Body", reviewed_by=steward)
    tombstone, _ = claim_promote(claim=claim, steward=steward, stance=stance, reason="KB")
    # The stance stands in for the claim; neither the claim nor its tombstone is recalled itself.
    assert recalled_claims(reader) == []
    (only,) = system_recall(organisation=reader, today=TODAY)
    assert isinstance(only, StanceVersion) and only.stance_id == "uk-rates"
    with pytest.raises(IntegrityError):
        raw_record(claim=tombstone, steward=foreign_steward, decision="admit")
    # Even an admit written with the guard disabled does not make a tombstone recallable.
    with connection.cursor() as cursor:
        # Deferred foreign-key checks must run first or the table cannot be altered.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE admissions_admissionrecord DISABLE TRIGGER admissions_guard_insert")
    raw_record(claim=tombstone, steward=foreign_steward, decision="admit")
    assert tombstone.pk not in {c.pk for c in eligible_claims(today=TODAY)}
    assert recalled_claims(reader) == []


@override_settings(SYSTEM_RECALL_ENABLED=True, SYSTEM_RECALL_LIMIT=2)
def test_the_freshest_claims_come_first_up_to_the_limit(make_claim, admit, reader):
    for days in (5, 1, 3):
        admit(make_claim(body=f"{days} days old", as_of=TODAY - timedelta(days=days)))
    assert recalled(reader) == ["1 days old", "3 days old"]


@override_settings(SYSTEM_RECALL_ENABLED=True)
def test_the_section_labels_each_claim_with_tier_as_of_and_evidence_count(make_claim, admit, reader):
    claim = admit(
        make_claim(
            body="The base rate is 4.75%",
            transparency="glass",
            as_of=date(2026, 11, 1),
            evidence_refs=[{"kind": "url", "ref": "https://a.example"}, {"kind": "dataset", "ref": "boe:rates"}],
        )
    )
    section = system_recall_section(principal_of(reader), None, TODAY)
    assert "transparency tier" in section.title and "not this organisation's memory" in section.title
    assert list(section.lines) == [("[glass tier, as of 2026-11-01, 2 evidence refs] The base rate is 4.75%", claim.pk)]


def test_eligibility_is_one_query_however_many_claims(make_claim, admit, django_assert_num_queries):
    for index in range(6):
        admit(make_claim(body=f"Claim {index}", as_of=TODAY))
    with django_assert_num_queries(1):
        assert len(list(eligible_claims(today=TODAY))) == 6
