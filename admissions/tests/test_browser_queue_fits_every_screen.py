"""The stewards' queue in headless Chromium against gunicorn, at a desktop's 1280 px and a phone's 390 px:
a claim's text gets room to be read, and every button is on screen without scrolling sideways."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from playwright.sync_api import Page, expect

from .helpers import log_in_to_admin

pytestmark = pytest.mark.browser

LONG_CLAIM = (
    "The Bank of England held the base rate at 4.75% at the November meeting, with two members voting for a cut "
    "and the minutes pointing at slower wage growth"
)


@pytest.fixture
def two_claims(make_claim, agent):
    make_claim(body=LONG_CLAIM, as_of=date.today() - timedelta(days=3))
    make_claim(body="The Bank of England base rate is 5%", agent=agent)


def claim_rows(page: Page):
    page.goto("/admin/admissions/systemclaim/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)
    return rows


def test_at_1280_px_a_claims_text_column_is_at_least_300_px_and_nothing_runs_off(page: Page, two_claims, steward):
    log_in_to_admin(page, "stella", "pw-stella-123", width=1280)
    rows = claim_rows(page)
    # The cell's text: its box less the admin's 8 px padding on each side.
    assert rows.first.locator("td.field-claim_cell").bounding_box()["width"] - 16 >= 300
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    for button in rows.first.get_by_role("button").all():
        box = button.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280, button.inner_text()


def test_at_390_px_the_queue_is_a_column_of_claims_with_their_buttons_on_screen(page: Page, two_claims, steward):
    log_in_to_admin(page, "stella", "pw-stella-123", width=390)
    rows = claim_rows(page)
    first = rows.first
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    expect(first.locator("td.field-claim_cell")).to_contain_text("two members voting for a cut")
    assert first.locator("td.field-claim_cell").bounding_box()["width"] >= 300
    buttons = first.get_by_role("button").all()
    assert [button.inner_text() for button in buttons] == ["Admit", "Reject", "Challenge"]
    for button in [*buttons, first.get_by_role("textbox")]:
        box = button.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
