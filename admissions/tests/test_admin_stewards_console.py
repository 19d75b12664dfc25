"""The stewards' console: a queue built for deciding, a claim page that answers "should I admit this?",
one vocabulary for who did what, and stances revised and retired from their page."""

from __future__ import annotations

import re

import pytest

from accounts.models import Membership
from accounts.services import user_create
from admissions.models import AdmissionRecord, StanceVersion
from admissions.services import admission_decide, claim_promote, stance_create

QUEUE = "/admin/admissions/systemclaim/"


def listed(response) -> list[str]:
    return [claim.body for claim in response.context["cl"].result_list]


@pytest.fixture
def promoted(make_claim, steward, foreign_steward):
    claim = make_claim(body="Promoted claim")
    admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="Checked")
    stance = stance_create(id="uk-rates", title="UK rates", body="About", reviewed_by=steward)
    tombstone, _ = claim_promote(claim=claim, steward=steward, stance=stance, reason="Belongs in the KB")
    return claim, tombstone, stance


def test_tombstones_are_hidden_from_the_queue_unless_asked_for(steward_client, make_claim, promoted):
    make_claim(body="A candidate")
    claim, tombstone, _ = promoted
    assert listed(steward_client.get(QUEUE)) == ["A candidate", "Promoted claim"]
    assert tombstone.body in listed(steward_client.get(QUEUE, {"status": "all"}))
    assert listed(steward_client.get(QUEUE, {"status": "tombstone"})) == [tombstone.body]
    page = steward_client.get(QUEUE).content.decode()
    assert "Claims to review (no stance pointers)" in page and "Stance pointer (1)" in page


def test_each_row_shows_evidence_kinds_claimant_organisation_and_age(steward_client, make_claim, agent):
    make_claim(
        body="Two kinds",
        agent=agent,
        evidence_refs=[{"kind": "url", "ref": "https://a.example"}, {"kind": "dataset", "ref": "ons:cpi"}],
    )
    page = steward_client.get(QUEUE).content.decode()
    row = re.search(r"<tr>.*?Two kinds.*?</tr>", page, re.S).group(0)
    assert "2: dataset, url" in row and "agent helper" in row and "acme" in row
    assert re.search(r'<td class="field-age">\d+\xa0minutes?</td>', row)
    assert "sys:boe-base-rate · bank-of-england · ledger · as of" in row


def test_each_row_has_its_own_reason_and_the_decisions_its_status_takes(steward_client, claim):
    page = steward_client.get(QUEUE).content.decode()
    form_id = f"decide-{claim.pk}"
    assert f'<input type="text" name="reason" form="{form_id}" required' in page
    for decision in ("admit", "reject", "challenge"):
        assert f'form="{form_id}" formaction="{QUEUE}{claim.pk}/decide/{decision}/"' in page
    assert f'formaction="{QUEUE}{claim.pk}/decide/revoke/"' not in page
    # The row's form sits outside the changelist's form, since forms cannot nest.
    changelist_form = page.index('id="changelist-form"')
    assert page.index("</form>", changelist_form) < page.index(f'<form id="{form_id}"')
    assert "<title>System claims to decide | Archivist</title>" in page


def test_the_queue_says_why_in_place_of_the_buttons_on_your_own_claim(steward_client, make_claim, steward):
    make_claim(body="Mine", user=steward)
    page = steward_client.get(QUEUE).content.decode()
    row = re.search(r"<tr>.*?Mine.*?</tr>", page, re.S).group(0)
    assert '<p class="decide-blocked">You wrote this claim; another steward must decide it.</p>' in row
    assert "formaction" not in row


def test_deciding_from_a_row_records_it_and_returns_to_the_queue(steward_client, claim, steward):
    response = steward_client.post(
        f"{QUEUE}{claim.pk}/decide/admit/", {"reason": "Matches the source", "next": f"{QUEUE}?status=candidate"}
    )
    assert response.status_code == 302 and response["Location"] == f"{QUEUE}?status=candidate"
    record = AdmissionRecord.objects.get(claim_id=claim.pk)
    assert (record.decision, record.steward, record.reason) == ("admit", steward, "Matches the source")


def test_a_row_decision_never_redirects_off_the_site(steward_client, claim):
    response = steward_client.post(
        f"{QUEUE}{claim.pk}/decide/admit/", {"reason": "ok", "next": "https://evil.example/"}
    )
    assert response.status_code == 302 and response["Location"] == f"{QUEUE}{claim.pk}/change/"


def test_a_row_decision_without_a_reason_records_nothing(steward_client, claim):
    response = steward_client.post(f"{QUEUE}{claim.pk}/decide/admit/", {"reason": " ", "next": QUEUE})
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    assert not AdmissionRecord.objects.exists()


def test_the_claim_page_lists_claims_with_the_same_slug_or_entity_and_their_statuses(
    steward_client, make_claim, foreign_steward
):
    claim = make_claim(body="The rate is 4.75%")
    rival = make_claim(body="The rate is 5%")
    admission_decide(claim=rival, steward=foreign_steward, decision="reject", reason="Old figure")
    make_claim(body="Same entity", slug="sys:boe-governor")
    make_claim(body="Unrelated", slug="sys:ons-cpi", entity="ons")
    page = steward_client.get(f"{QUEUE}{claim.pk}/change/").content.decode()
    related = page[page.index('class="related-claims"') :]
    related = related[: related.index("</table>")]
    assert "The rate is 5%" in related and "Rejected" in related and "same slug" in related
    assert "Same entity" in related and "same entity" in related
    assert "Unrelated" not in related and "The rate is 4.75%" not in related


def test_a_promoted_claim_names_its_stance_and_no_provenance_reads_run(steward_client, promoted, make_claim, agent):
    claim, _, _ = promoted
    page = steward_client.get(f"{QUEUE}{claim.pk}/change/").content.decode()
    assert '<a href="/admin/admissions/stance/uk-rates/change/">uk-rates</a>' in page
    assert "steward fern" in page and "steward stella" in page
    api_claim = make_claim(body="From the API", agent=agent)
    page = steward_client.get(f"{QUEUE}{api_claim.pk}/change/").content.decode()
    assert "agent helper" in page and "None given" in page
    assert ">Run<" not in page and "Source kind" not in page


def test_the_stance_page_shows_versions_and_lets_another_steward_retire_it(client, promoted, steward, other_org):
    _, _, stance = promoted
    client.force_login(steward)
    url = f"/admin/admissions/stance/{stance.pk}/change/"
    page = client.get(url).content.decode()
    assert "Live: agents of opted-in organisations are shown version 1" in page
    assert "You made this version of the stance; another steward must retire it." in page
    response = client.post(f"/admin/admissions/stance/{stance.pk}/retire/", {"reason": "Mine"}, follow=True)
    assert "another steward must retire it" in response.content.decode()
    assert StanceVersion.objects.live().count() == 1

    revised = client.post(
        f"/admin/admissions/stance/{stance.pk}/revise/", {"text": "UK Bank Rate", "reason": "Clearer"}, follow=True
    )
    assert "Stance uk-rates revised." in revised.content.decode()
    assert StanceVersion.objects.live().get().text == "UK Bank Rate"

    other = user_create(username="sid", organisation=other_org, role=Membership.Role.STEWARD, password="pw-sid-123")
    client.force_login(other)
    response = client.post(f"/admin/admissions/stance/{stance.pk}/retire/", {"reason": "Out of date"}, follow=True)
    assert "Stance uk-rates retired." in response.content.decode()
    assert not StanceVersion.objects.live().exists()
    assert "Retired: agents are not shown this stance" in client.get(url).content.decode()


def test_someone_without_the_role_cannot_revise_or_retire(client, promoted, superuser):
    _, _, stance = promoted
    client.force_login(superuser)
    for action in ("revise", "retire"):
        response = client.post(f"/admin/admissions/stance/{stance.pk}/{action}/", {"reason": "x", "text": "y"})
        assert response.status_code in (302, 403)
    assert StanceVersion.objects.live().get().text == "Promoted claim"


def test_the_audit_and_the_stance_page_name_stewards_in_the_same_words(steward_client, promoted):
    audit = steward_client.get("/admin/admissions/admissionrecord/").content.decode()
    assert '<td class="field-steward_name">steward fern</td>' in audit
    assert '<td class="field-steward_name">steward stella</td>' in audit
    stance_page = steward_client.get("/admin/admissions/stance/uk-rates/change/").content.decode()
    assert "steward stella" in stance_page
    listing = steward_client.get("/admin/admissions/stance/").content.decode()
    assert "steward stella" in listing and "Live" in listing
