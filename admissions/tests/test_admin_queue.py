"""The queue: candidates first, oldest first; filters on derived values with counts; flat query count."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from admissions.services import admission_decide, claim_promote, stance_create

QUEUE = "/admin/admissions/systemclaim/"


def listed(response) -> list[str]:
    return [claim.body for claim in response.context["cl"].result_list]


@pytest.fixture
def mixed(make_claim, foreign_steward):
    """One claim in each status, written so that creation order differs from queue order."""
    admitted = make_claim(body="Admitted one")
    admission_decide(claim=admitted, steward=foreign_steward, decision="admit", reason="ok")
    rejected = make_claim(body="Rejected one", transparency="glass")
    admission_decide(claim=rejected, steward=foreign_steward, decision="reject", reason="no")
    old_candidate = make_claim(body="Older candidate", entity="ons")
    challenged = make_claim(body="Challenged one")
    admission_decide(claim=challenged, steward=foreign_steward, decision="challenge", reason="hm")
    new_candidate = make_claim(
        body="Newer candidate",
        as_of=date.today() - timedelta(days=400),
        evidence_refs=[{"kind": "dataset", "ref": "ons:cpi-2026"}],
    )
    return dict(admitted=admitted, rejected=rejected, old=old_candidate, challenged=challenged, new=new_candidate)


def test_candidates_come_first_then_challenged_then_decided_oldest_first(steward_client, mixed):
    assert listed(steward_client.get(QUEUE)) == [
        "Older candidate",
        "Newer candidate",
        "Challenged one",
        "Admitted one",
        "Rejected one",
    ]


def test_a_claim_whose_author_says_admitted_queues_as_a_candidate(steward_client, make_claim):
    make_claim(body="Says admitted", admission="admitted")
    response = steward_client.get(QUEUE, {"status": "candidate"})
    assert listed(response) == ["Says admitted"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"status": "challenged"}, ["Challenged one"]),
        ({"status": "admitted"}, ["Admitted one"]),
        ({"transparency__exact": "glass"}, ["Rejected one"]),
        ({"entity": "ons"}, ["Older candidate"]),
        ({"as_of_age": "older"}, ["Newer candidate"]),
        ({"evidence_kind": "dataset"}, ["Newer candidate"]),
        ({"status": "candidate", "evidence_kind": "url"}, ["Older candidate"]),
    ],
)
def test_filters_on_status_transparency_entity_age_and_evidence_kind(steward_client, mixed, params, expected):
    assert listed(steward_client.get(QUEUE, params)) == expected


def test_filter_choices_show_counts_that_match_the_other_filters(steward_client, mixed):
    page = steward_client.get(QUEUE, {"transparency__exact": "ledger"}).content.decode()
    # Four ledger claims: two candidates, one challenged, one admitted, no rejected.
    assert "Candidate (2)" in page and "Challenged (1)" in page and "Admitted (1)" in page
    assert "Rejected (0)" in page
    assert "4 results" in page


def test_a_promoted_claim_and_its_tombstone_are_labelled(steward_client, mixed, steward):
    stance = stance_create(id="uk-rates", title="UK rates", body="Body", reviewed_by=steward)
    claim_promote(claim=mixed["admitted"], steward=steward, stance=stance, reason="KB")
    page = steward_client.get(QUEUE).content.decode()
    assert "Admitted, promoted to uk-rates" in page
    assert "Stance pointer" in page


def _queue_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(QUEUE, {"status": "candidate"}).status_code == 200
    return len(queries)


def test_the_queue_query_count_stays_flat_as_claims_grow(
    steward_client, make_claim, agent, foreign_steward, django_assert_max_num_queries
):
    def grow(n: int) -> None:
        for index in range(n):
            claim = make_claim(body=f"Claim {index}", agent=agent) if index % 2 else make_claim(body=f"Claim {index}")
            if index % 3 == 0:
                admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="ok")

    grow(3)
    few = _queue_queries(steward_client)
    grow(45)
    with django_assert_max_num_queries(few):
        assert steward_client.get(QUEUE, {"status": "candidate"}).status_code == 200
