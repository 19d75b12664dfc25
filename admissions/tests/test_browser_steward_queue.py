"""A steward logs in to the real server (gunicorn, headless Chromium) and works the queue end to end."""

from __future__ import annotations

import re
from datetime import date

import pytest
from playwright.sync_api import Page, expect

from admissions.models import AdmissionRecord, Stance
from memories.models import Memory

from .helpers import log_in_to_admin

pytestmark = pytest.mark.browser


def test_a_steward_admits_a_claim_and_promotes_it_to_a_stance(page: Page, make_claim, steward):
    make_claim(body="Already decided elsewhere", as_of=date(2026, 1, 1))
    claim = make_claim(
        body="The Bank of England base rate is 4.75%",
        evidence_refs=[{"kind": "url", "ref": "https://www.bankofengland.co.uk/monetary-policy"}],
    )
    log_in_to_admin(page, "stella", "pw-stella-123")

    page.get_by_role("link", name="System claims").first.click()
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("#changelist-filter")).to_contain_text("Candidate (2)")
    page.get_by_role("link", name="The Bank of England base rate is 4.75%").click()
    expect(page.get_by_role("link", name="https://www.bankofengland.co.uk/monetary-policy")).to_have_attribute(
        "rel", "noopener noreferrer nofollow"
    )

    page.get_by_label("Reason for the decision").fill("Matches the published rate")
    page.get_by_role("button", name=re.compile("^Admit")).click()
    expect(page.locator(".messagelist")).to_contain_text("Claim admitted")
    expect(page.locator(".field-history")).to_contain_text("Matches the published rate")
    expect(page.locator(".field-status")).to_contain_text("Admitted")

    page.get_by_role("link", name=re.compile("^Promote to stance")).click()
    page.get_by_label("New stance id").fill("uk-interest-rates")
    page.get_by_label("New stance title").fill("UK interest rates")
    page.get_by_label("About the new stance").fill("What the base rate is, and where it is published.")
    page.get_by_label("Reason").fill("Belongs in the knowledge base")
    page.get_by_role("button", name="Promote").click()
    expect(page.locator(".messagelist")).to_contain_text("promoted to the stance uk-interest-rates")
    expect(page.locator(".field-supersede_chain")).to_contain_text("pointer to the stance uk-interest-rates")

    claim.refresh_from_db()
    assert claim.superseded_by.stance == "uk-interest-rates"
    assert Stance.objects.get().reviewed_by == steward
    assert list(AdmissionRecord.objects.values_list("decision", flat=True).order_by("id")) == ["admit", "promote"]
    assert Memory.objects.filter(stance="uk-interest-rates").count() == 1
