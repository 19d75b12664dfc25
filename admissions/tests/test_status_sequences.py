"""The derived status over generated sequences of decisions (hypothesis).

Whatever order stewards, the author and non-stewards try things in, the
status the database derives matches a small reference model, and no sequence
makes a claim admitted without an admit from someone other than its author,
not even records written around the services with the insert guard disabled.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.models import Membership
from accounts.services import user_create
from admissions.services import ALLOWED_FROM, DecisionRefused, admission_decide

from .helpers import raw_record, status_of

DECISIONS = ["admit", "reject", "challenge", "revoke"]
STATUS_OF_DECISION = {"admit": "admitted", "reject": "rejected", "challenge": "challenged", "revoke": "challenged"}
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def reference_status(records, author_id) -> str:
    """The rule, restated: the latest (time, then insert order) record by someone other than the author."""
    effective = [r for r in records if r["steward"] != author_id]
    if not effective:
        return "candidate"
    latest = max(effective, key=lambda r: (r["at"], r["id"]))
    return STATUS_OF_DECISION[latest["decision"]]


@pytest.fixture
def people(steward, foreign_steward, member, org):
    """The claim's author is a steward; two other stewards and a member try too."""
    second = user_create(username="sam", organisation=org, role=Membership.Role.STEWARD)
    return {"author": steward, "second": second, "foreign": foreign_steward, "member": member}


attempts = st.lists(
    st.tuples(st.sampled_from(["author", "second", "foreign", "member"]), st.sampled_from(DECISIONS)), max_size=8
)


@SETTINGS
@given(sequence=attempts, claimed=st.sampled_from(["candidate", "admitted", "rejected"]))
def test_service_sequences_follow_the_rules_and_never_admit_without_another_persons_admit(
    make_claim, people, sequence, claimed
):
    claim = make_claim(user=people["author"], admission=claimed)
    base = timezone.now()
    written = []
    for index, (who, decision) in enumerate(sequence):
        person = people[who]
        current = reference_status(written, people["author"].pk)
        expected = who in ("second", "foreign") and current in ALLOWED_FROM[decision]
        try:
            record = admission_decide(
                claim=claim,
                steward=person,
                decision=decision,
                reason=f"step {index}",
                now=base + timedelta(seconds=index),
            )
        except (DecisionRefused, PermissionDenied):
            assert not expected, (who, decision, current)
            continue
        assert expected, (who, decision, current)
        written.append({"id": record.pk, "steward": person.pk, "decision": decision, "at": record.at})

    status = status_of(claim)
    assert status == reference_status(written, people["author"].pk)
    if status == "admitted":
        latest = max(written, key=lambda r: (r["at"], r["id"]))
        assert latest["decision"] == "admit" and latest["steward"] != people["author"].pk


raw_records = st.lists(
    st.tuples(
        st.sampled_from(["author", "second", "foreign"]),
        st.sampled_from(DECISIONS),
        st.integers(min_value=0, max_value=5),  # minutes: ties and out-of-order times on purpose
    ),
    max_size=8,
)


@pytest.fixture
def insert_guard_disabled(db):
    # Rolled back with the test's transaction.
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE admissions_admissionrecord DISABLE TRIGGER admissions_guard_insert")


@SETTINGS
@given(sequence=raw_records)
def test_even_records_written_around_the_guard_never_admit_on_the_authors_word(
    make_claim, people, insert_guard_disabled, sequence
):
    claim = make_claim(user=people["author"], admission="admitted")
    base = timezone.now()
    written = []
    for who, decision, minutes in sequence:
        at = base + timedelta(minutes=minutes)
        record_id = raw_record(claim=claim, steward=people[who], decision=decision, at=at)
        written.append({"id": record_id, "steward": people[who].pk, "decision": decision, "at": at})

    status = status_of(claim)
    assert status == reference_status(written, people["author"].pk)
    if status == "admitted":
        assert any(r["decision"] == "admit" and r["steward"] != people["author"].pk for r in written)
    if all(r["steward"] == people["author"].pk for r in written):
        assert status == "candidate"
