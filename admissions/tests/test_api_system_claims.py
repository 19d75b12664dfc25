"""POST /api/v1/system-claims and GET /api/v1/system-claims/{id}."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from admissions.models import AdmissionRecord
from admissions.services import admission_decide, claim_promote, stance_create
from memories.models import Memory

URL = "/api/v1/system-claims"
VALID = {
    "body": "The Bank of England base rate is 4.75%",
    "slug": "sys:boe-base-rate",
    "entity": "bank-of-england",
    "transparency": "ledger",
    "as_of": "2026-11-01",
    "evidence_refs": [{"kind": "url", "ref": "https://www.bankofengland.co.uk/monetary-policy"}],
}


@pytest.fixture
def agent_client(agent_with_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_with_token[1]}")
    return client


def session_client(user):
    client = APIClient()
    client.force_login(user)
    return client


def test_an_agent_submits_a_claim_and_it_starts_as_a_candidate(agent_client, agent, org):
    response = agent_client.post(URL, {**VALID, "admission": "admitted"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "candidate" and body["claimed_admission"] == "admitted"
    assert body["history"] == [] and body["author"] == "agent helper" and body["organisation"] == "acme"
    claim = Memory.objects.get(pk=body["id"])
    assert (claim.bucket, claim.organisation_id, claim.agent_id, claim.written_by_id) == (
        "system",
        org.pk,
        agent.pk,
        None,
    )


def test_a_member_without_the_permission_is_refused(member):
    response = session_client(member).post(URL, VALID, format="json")
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert not Memory.objects.exists()


def test_a_member_granted_the_permission_may_submit(member):
    member.user_permissions.add(Permission.objects.get(codename="submit_claim", content_type__app_label="admissions"))
    response = session_client(member).post(URL, VALID, format="json")
    assert response.status_code == 201, response.json()
    assert Memory.objects.get().written_by_id == member.pk


def test_a_steward_may_submit_through_the_stewards_group(steward):
    assert session_client(steward).post(URL, VALID, format="json").status_code == 201


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"slug": "boe-base-rate"}, "slug", "sys:"),
        ({"slug": "sys:"}, "slug", "sys:"),
        ({"entity": ""}, "entity", "blank"),
        ({"transparency": "opaque"}, "transparency", "valid choice"),
        ({"as_of": "yesterday"}, "as_of", "format"),
        ({"as_of": (date.today() + timedelta(days=2)).isoformat()}, "as_of", "future"),
        ({"evidence_refs": []}, "evidence_refs", "at least one"),
        ({"evidence_refs": [{"kind": "rumour", "ref": "x"}]}, "evidence_refs", "known kinds"),
        ({"evidence_refs": [{"kind": "url"}]}, "evidence_refs", "exactly"),
        ({"evidence_refs": "https://example.org"}, "evidence_refs", "at least one"),
        ({"body": "   "}, "body", "blank"),
        ({"body": "x" * 2001}, "body", "2000"),
        ({"organisation": "globex"}, "organisation", "credentials"),
        ({"stance": "uk-rates"}, "stance", "not part of a claim"),
    ],
)
def test_each_refused_rule_names_the_field_and_the_reason(agent_client, change, field, words):
    response = agent_client.post(URL, {**VALID, **change}, format="json")
    assert response.status_code == 400
    error = response.json()
    assert error["error"] == "invalid"
    assert field in error["fields"], error
    assert words.lower() in " ".join(error["fields"][field]).lower(), error
    assert not Memory.objects.exists()


def test_a_missing_field_is_named(agent_client):
    response = agent_client.post(URL, {k: v for k, v in VALID.items() if k != "as_of"}, format="json")
    assert response.status_code == 400 and "as_of" in response.json()["fields"]


def test_an_anonymous_caller_is_refused(db):
    assert APIClient().post(URL, VALID, format="json").status_code in (401, 403)


@pytest.fixture
def claim_id(agent_client):
    return agent_client.post(URL, VALID, format="json").json()["id"]


def test_the_claims_own_organisation_reads_it_with_status_and_history(claim_id, member, foreign_steward):
    claim = Memory.objects.get(pk=claim_id)
    admission_decide(claim=claim, steward=foreign_steward, decision="reject", reason="Wrong figure")
    response = session_client(member).get(f"{URL}/{claim_id}")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "rejected"
    # The claim's own organisation learns which steward decided, in the words every screen uses.
    assert [(h["decision"], h["reason"], h["steward"]) for h in body["history"]] == [
        ("reject", "Wrong figure", "steward fern")
    ]


def test_a_steward_of_any_organisation_reads_a_candidate_and_sees_who_decided(claim_id, foreign_steward, steward):
    admission_decide(claim=Memory.objects.get(pk=claim_id), steward=steward, decision="challenge", reason="Check")
    response = session_client(foreign_steward).get(f"{URL}/{claim_id}")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "challenged" and body["organisation"] == "acme"
    assert body["history"][0]["steward"] == "steward stella"


def test_another_organisation_gets_404_until_the_claim_is_admitted(claim_id, outsider, steward):
    reader = session_client(outsider)
    assert reader.get(f"{URL}/{claim_id}").status_code == 404
    admission_decide(claim=Memory.objects.get(pk=claim_id), steward=steward, decision="admit", reason="ok")
    response = reader.get(f"{URL}/{claim_id}")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "admitted"
    # The network learns the claim, not who in which organisation made it.
    assert body["organisation"] is None and body["author"] is None
    # Another organisation sees only that a steward decided, not which one.
    assert [h["steward"] for h in body["history"]] == ["steward"]
    admission_decide(claim=Memory.objects.get(pk=claim_id), steward=steward, decision="revoke", reason="Oops")
    assert reader.get(f"{URL}/{claim_id}").status_code == 404


def test_a_claim_that_says_admitted_is_still_hidden_from_other_organisations(agent_client, outsider):
    claim_id = agent_client.post(URL, {**VALID, "admission": "admitted"}, format="json").json()["id"]
    assert session_client(outsider).get(f"{URL}/{claim_id}").status_code == 404


def test_an_unknown_id_and_a_user_memory_are_404(member, make_memory):
    client = session_client(member)
    assert client.get(f"{URL}/00000000-0000-0000-0000-000000000000").status_code == 404
    assert client.get(f"{URL}/{make_memory().pk}").status_code == 404


def test_the_endpoints_are_in_the_schema(db):
    response = APIClient().get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    text = response.content.decode()
    assert "/api/v1/system-claims" in text and "system_claims_submit" in text and "system_claims_read" in text


def test_no_record_is_written_by_submitting(agent_client):
    agent_client.post(URL, VALID, format="json")
    assert not AdmissionRecord.objects.exists()


def test_history_names_a_steward_by_display_name_and_a_promoted_claim_names_its_stance(claim_id, member, steward):
    steward.first_name, steward.last_name = "Stella", "Marsh"
    steward.save()
    claim = Memory.objects.get(pk=claim_id)
    admission_decide(claim=claim, steward=steward, decision="admit", reason="Checked")
    stance = stance_create(id="uk-interest-rates", title="UK rates", body="About", reviewed_by=steward)
    claim_promote(claim=claim, steward=steward, stance=stance, reason="KB")
    body = session_client(member).get(f"{URL}/{claim_id}").json()
    assert [h["steward"] for h in body["history"]] == ["steward Stella Marsh", "steward Stella Marsh"]
    assert body["promoted_to"] == "uk-interest-rates"
