"""Admit, reject, challenge, revoke and promote through the admin, as a steward, as the claim's author
and as someone who is not a steward; bulk actions that refuse what a steward may not decide."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

import pytest
from django.contrib.messages import get_messages
from django.utils import timezone

from admissions.models import AdmissionRecord, Stance
from admissions.services import admission_decide, claim_promote, stance_create
from memories.models import Memory

QUEUE = "/admin/admissions/systemclaim/"


def decide_url(claim, decision):
    return f"{QUEUE}{claim.pk}/decide/{decision}/"


def promote_url(claim):
    return f"{QUEUE}{claim.pk}/promote/"


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


@pytest.mark.parametrize("decision", ["admit", "reject", "challenge"])
def test_a_steward_decides_on_a_confirmation_page_with_a_reason(steward_client, claim, steward, decision):
    page = steward_client.get(decide_url(claim, decision))
    assert page.status_code == 200 and 'name="reason"' in page.content.decode()
    assert not AdmissionRecord.objects.exists()  # the GET only asks
    response = steward_client.post(decide_url(claim, decision), {"reason": "Checked against the source"})
    assert response.status_code == 302 and response["Location"].endswith(f"{claim.pk}/change/")
    record = AdmissionRecord.objects.get()
    assert (record.decision, record.steward, record.reason) == (decision, steward, "Checked against the source")


def test_a_decision_without_a_reason_is_not_recorded(steward_client, claim):
    response = steward_client.post(decide_url(claim, "admit"), {"reason": "   "})
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    assert not AdmissionRecord.objects.exists()


def test_a_steward_revokes_an_admission(steward_client, claim, foreign_steward):
    admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="ok")
    steward_client.post(decide_url(claim, "revoke"), {"reason": "Admitted in error"})
    assert AdmissionRecord.objects.latest("id").decision == "revoke"


@pytest.mark.parametrize("decision", ["admit", "reject", "challenge"])
def test_the_claims_author_cannot_decide_it_in_the_admin(client, make_claim, steward, decision):
    own = make_claim(user=steward)
    client.force_login(steward)
    response = client.post(decide_url(own, decision), {"reason": "It is true, I wrote it"})
    assert response.status_code == 200
    assert "another steward must decide it" in response.content.decode()
    assert not AdmissionRecord.objects.exists()


@pytest.mark.parametrize("persona", ["owner", "member"])
def test_someone_who_is_not_a_steward_cannot_decide_in_the_admin(client, claim, request, persona):
    client.force_login(request.getfixturevalue(persona))
    response = client.post(decide_url(claim, "admit"), {"reason": "ok"})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert client.post(promote_url(claim), {"reason": "ok"}).status_code == 302
    assert not AdmissionRecord.objects.exists()


def test_an_administrator_without_the_role_cannot_decide(client, claim, superuser):
    client.force_login(superuser)
    assert client.post(decide_url(claim, "admit"), {"reason": "ok"}).status_code == 403
    assert not AdmissionRecord.objects.exists()


def test_an_unknown_decision_is_404(steward_client, claim):
    assert steward_client.get(decide_url(claim, "promote")).status_code == 404
    assert steward_client.get(decide_url(claim, "approve")).status_code == 404


def test_a_decision_the_status_does_not_take_is_refused_with_the_reason(steward_client, claim):
    response = steward_client.post(decide_url(claim, "revoke"), {"reason": "Nothing to revoke"})
    assert "cannot take &#x27;revoke&#x27;" in response.content.decode()
    assert not AdmissionRecord.objects.exists()


@pytest.fixture
def admitted(claim, foreign_steward):
    admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="ok")
    return claim


def test_a_steward_promotes_to_a_new_stance(steward_client, admitted, steward):
    response = steward_client.post(
        promote_url(admitted),
        {"new_id": "uk-interest-rates", "new_title": "UK interest rates", "new_body": "The base rate.", "reason": "KB"},
    )
    assert response.status_code == 302
    stance = Stance.objects.get()
    assert (stance.pk, stance.reviewed_by) == ("uk-interest-rates", steward)
    admitted.refresh_from_db()
    assert admitted.superseded_by.stance == "uk-interest-rates"
    assert AdmissionRecord.objects.filter(decision="promote", stance=stance).exists()


def test_a_steward_promotes_to_an_existing_stance(steward_client, admitted, foreign_steward):
    stance = stance_create(id="uk-rates", title="UK rates", body="Body", reviewed_by=foreign_steward)
    response = steward_client.post(promote_url(admitted), {"stance": stance.pk, "reason": "Fits"})
    assert response.status_code == 302
    admitted.refresh_from_db()
    assert admitted.superseded_by.stance == "uk-rates"


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"reason": "KB"}, "Pick an existing stance or describe a new one."),
        ({"new_id": "Bad Id", "new_title": "t", "new_body": "b", "reason": "KB"}, "lowercase"),
        ({"new_id": "ok-id", "reason": "KB"}, "needs an id and a title"),
        ({"new_id": "ok-id", "new_title": "t", "new_body": "b"}, "This field is required"),
    ],
)
def test_the_promote_form_says_what_is_missing(steward_client, admitted, data, error):
    response = steward_client.post(promote_url(admitted), data)
    assert response.status_code == 200 and error in response.content.decode()
    assert not Stance.objects.exists() and not Memory.objects.filter(stance__isnull=False).exists()


def test_a_refused_promotion_leaves_no_new_stance_behind(steward_client, claim):
    response = steward_client.post(
        promote_url(claim), {"new_id": "uk-rates", "new_title": "UK rates", "new_body": "Body", "reason": "KB"}
    )
    assert "cannot take &#x27;promote&#x27;" in response.content.decode()
    assert not Stance.objects.exists()


def test_the_author_cannot_promote_their_own_claim(client, make_claim, steward, foreign_steward):
    own = make_claim(user=steward)
    admission_decide(claim=own, steward=foreign_steward, decision="admit", reason="ok")
    client.force_login(steward)
    response = client.post(promote_url(own), {"new_id": "x", "new_title": "x", "new_body": "x", "reason": "KB"})
    assert "another steward must decide it" in response.content.decode()
    assert not Stance.objects.exists()


@pytest.fixture
def selection(make_claim, steward, foreign_steward):
    """Two candidates, the steward's own claim, and a promotion tombstone."""
    first, second = make_claim(body="First"), make_claim(body="Second")
    own = make_claim(body="Mine", user=steward)
    promoted = make_claim(body="Promoted")
    admission_decide(claim=promoted, steward=steward, decision="admit", reason="ok")
    stance = stance_create(id="kb", title="KB", body="KB", reviewed_by=foreign_steward)
    tombstone, _ = claim_promote(claim=promoted, steward=foreign_steward, stance=stance, reason="KB")
    return [first, second, own, tombstone]


def test_a_bulk_action_asks_for_a_reason_first(steward_client, selection):
    data = {"action": "admit_selected", "_selected_action": [str(c.pk) for c in selection]}
    response = steward_client.post(QUEUE, data)
    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="reason"' in page and 'name="post" value="yes"' in page
    assert not AdmissionRecord.objects.filter(decision="admit").exclude(reason="ok").exists()
    response = steward_client.post(QUEUE, {**data, "post": "yes", "reason": ""})
    assert response.status_code == 200 and "This field is required" in response.content.decode()


def test_a_bulk_admit_refuses_own_claims_and_tombstones_and_reports_counts(steward_client, selection, steward):
    first, second, own, tombstone = selection
    data = {"action": "admit_selected", "_selected_action": [str(c.pk) for c in selection]}
    # Tombstones are listed (and selectable) only when the queue is asked to show them.
    response = steward_client.post(
        QUEUE + "?status=all", {**data, "post": "yes", "reason": "Batch checked"}, follow=True
    )
    assert "2 claims admitted; 2 refused (1 your own, 1 stance pointers)." in messages_of(response)
    decided = set(AdmissionRecord.objects.filter(reason="Batch checked").values_list("claim_id", flat=True))
    assert decided == {first.pk, second.pk}


@pytest.mark.parametrize(("action", "past"), [("reject_selected", "rejected"), ("challenge_selected", "challenged")])
def test_bulk_reject_and_challenge(steward_client, make_claim, action, past):
    claims = [make_claim(body=f"Claim {i}") for i in range(3)]
    data = {"action": action, "_selected_action": [str(c.pk) for c in claims], "post": "yes", "reason": "Batch"}
    response = steward_client.post(QUEUE, data, follow=True)
    assert f"3 claims {past}." in messages_of(response)


def test_bulk_actions_are_not_offered_to_someone_without_the_role(client, superuser, claim):
    client.force_login(superuser)
    data = {"action": "admit_selected", "_selected_action": [str(claim.pk)], "post": "yes", "reason": "x"}
    assert client.post(QUEUE, data).status_code == 403
    assert not AdmissionRecord.objects.exists()


def test_the_audit_lists_every_decision_filterable_by_steward_and_date(
    steward_client, make_claim, steward, foreign_steward
):
    first, second = make_claim(body="First"), make_claim(body="Second")
    long_ago = date.today() - timedelta(days=40)
    admission_decide(
        claim=first,
        steward=foreign_steward,
        decision="admit",
        reason="By fern, long ago",
        now=timezone.make_aware(datetime.combine(long_ago, time(12))),
    )
    admission_decide(claim=second, steward=steward, decision="reject", reason="By stella, today")
    audit = "/admin/admissions/admissionrecord/"
    everything = steward_client.get(audit).content.decode()
    assert "By fern, long ago" in everything and "By stella, today" in everything
    by_fern = steward_client.get(audit, {"steward__id__exact": str(foreign_steward.pk)}).content.decode()
    assert "By fern, long ago" in by_fern and "By stella, today" not in by_fern
    # What the date filter's "Past 7 days" link sends.
    midnight = timezone.make_aware(datetime.combine(date.today(), time()))
    recent = steward_client.get(
        audit, {"at__gte": str(midnight - timedelta(days=7)), "at__lt": str(midnight + timedelta(days=1))}
    ).content.decode()
    assert "By stella, today" in recent and "By fern, long ago" not in recent
