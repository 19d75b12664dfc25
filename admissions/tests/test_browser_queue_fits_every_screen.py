"""The stewards' queue in headless Chromium against gunicorn, at a desktop's 1280 px and a phone's 390 px:
a claim's text gets room to be read, and every button is on screen without scrolling sideways."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from playwright.sync_api import Page, expect

from .helpers import log_in_to_admin

pytestmark = pytest.mark.browser

PHONE, DESKTOP = 390, 1280
LONG_CLAIM = (
    "The Bank of England held the base rate at 4.75% at the November meeting, with two members voting for a cut "
    "and the minutes pointing at slower wage growth"
)


def on_screen(locator, width: int) -> None:
    for element in locator:
        box = element.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, element.inner_text()


def test_a_claims_text_has_300_px_at_1280_and_the_queue_is_a_column_of_claims_at_390(
    page: Page, make_claim, agent, steward
):
    make_claim(body=LONG_CLAIM, as_of=date.today() - timedelta(days=3))
    make_claim(body="The Bank of England base rate is 5%", agent=agent)
    log_in_to_admin(page, "stella", "pw-stella-123", width=DESKTOP)
    page.goto("/admin/admissions/systemclaim/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)
    first, claim = rows.first, rows.first.locator("td.field-claim_cell")
    expect(claim).to_contain_text("two members voting for a cut")

    # The cell's text: its box less the admin's 8 px padding on each side.
    assert claim.bounding_box()["width"] - 16 >= 300
    assert page.evaluate("document.documentElement.scrollWidth") <= DESKTOP
    on_screen(first.get_by_role("button").all(), DESKTOP)

    # The same queue laid out on a phone: a row is a block, the claim full width, its reason and buttons in reach.
    page.set_viewport_size({"width": PHONE, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE
    assert claim.bounding_box()["width"] >= 300
    buttons = first.get_by_role("button").all()
    assert [button.inner_text() for button in buttons] == ["Admit", "Reject", "Challenge"]
    on_screen([*buttons, first.get_by_role("textbox")], PHONE)
