"""A steward works the console at 1280 px in headless Chromium against gunicorn: the queue fits, decisions
are made from the keyboard, their own claim says why it cannot be decided, and a promoted claim's stance
reaches an opted-in organisation's agent through POST /api/v1/render."""

from __future__ import annotations

import os
import re
from datetime import date, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from admissions.models import AdmissionRecord, StanceVersion
from admissions.services import admission_decide
from memories.models import Memory

from .helpers import log_in_to_admin

pytestmark = pytest.mark.browser

# The screenshots in docs/ are retaken with ARCHIVIST_DOCS_SCREENSHOTS=1; otherwise a run leaves docs/ alone.
DOCS = Path(__file__).resolve().parents[2] / "docs"
WIDTH = 1280


def screenshot_path(tmp_path: Path, name: str) -> str:
    return str((DOCS if os.environ.get("ARCHIVIST_DOCS_SCREENSHOTS") == "1" else tmp_path) / name)


def press_access_key(page: Page, key: str) -> None:
    """Alt+key as Chromium on Linux receives it from a keyboard, so its own accesskey handling runs.

    Playwright's `keyboard.press("Alt+r")` sends no `unmodifiedText`, which is
    what Chromium matches an accesskey against, so the event goes in over CDP.
    """
    cdp = page.context.new_cdp_session(page)
    code, vk = f"Key{key.upper()}", ord(key.upper())
    cdp.send(
        "Input.dispatchKeyEvent",
        {
            "type": "keyDown",
            "modifiers": 1,
            "key": key,
            "code": code,
            "text": key,
            "unmodifiedText": key,
            "windowsVirtualKeyCode": vk,
        },
    )
    cdp.send(
        "Input.dispatchKeyEvent",
        {"type": "keyUp", "modifiers": 1, "key": key, "code": code, "windowsVirtualKeyCode": vk},
    )
    cdp.detach()


@pytest.fixture
def queue(make_claim, steward, foreign_steward, agent):
    """A small working queue: candidates from a person and an agent, a challenged one, the steward's own."""
    today = date.today()
    oldest = make_claim(
        body="The Bank of England base rate is 4.75% after the November meeting",
        as_of=today - timedelta(days=3),
        evidence_refs=[
            {"kind": "url", "ref": "https://www.bankofengland.co.uk/monetary-policy"},
            {"kind": "document", "ref": "MPC minutes, November 2026"},
        ],
    )
    rival = make_claim(body="The Bank of England base rate is 5%", agent=agent, as_of=today - timedelta(days=40))
    challenged = make_claim(
        body="UK CPI inflation was 2.1% in October",
        slug="sys:uk-cpi",
        entity="ons",
        transparency="glass",
        evidence_refs=[{"kind": "dataset", "ref": "ons:d7g7"}],
    )
    admission_decide(claim=challenged, steward=foreign_steward, decision="challenge", reason="Revised figures due")
    own = make_claim(body="Gilt yields rose in November", slug="sys:gilts", entity="dmo", user=steward)
    return dict(oldest=oldest, rival=rival, challenged=challenged, own=own)


def test_the_queue_fits_1280_px_and_a_steward_decides_a_row_from_the_keyboard(page: Page, queue, steward, tmp_path):
    log_in_to_admin(page, "stella", "pw-stella-123")
    page.get_by_role("link", name="System claims").first.click()
    expect(page.get_by_role("heading", name="System claims to decide")).to_be_visible()
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(4)
    # Candidates first, oldest first, then the challenged one.
    expect(rows.nth(0)).to_contain_text("base rate is 4.75%")
    expect(rows.nth(3)).to_contain_text("Challenged")

    # Everything a steward decides on is on screen: no column runs off the right edge.
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    first = rows.nth(0)
    visible = page.locator("#changelist .results").bounding_box()
    assert visible["x"] + visible["width"] <= WIDTH
    for cell in first.locator("td, th").all():
        box = cell.bounding_box()
        # Within the scrolling box the table sits in, so nothing is clipped either.
        assert box is not None and box["x"] + box["width"] <= visible["x"] + visible["width"] + 1, cell.inner_text()
    assert first.locator("td.field-claim_cell").bounding_box()["width"] - 16 >= 300  # its text, less the padding
    expect(first).to_contain_text("2: document, url")
    expect(first).to_contain_text("person mona")
    expect(first).to_contain_text("acme")
    expect(rows.nth(1)).to_contain_text("agent helper")

    # Their own claim says why, in place of the buttons.
    own_row = rows.filter(has_text="Gilt yields rose")
    expect(own_row.locator(".decide-blocked")).to_have_text("You wrote this claim; another steward must decide it.")
    expect(own_row.get_by_role("button")).to_have_count(0)

    page.screenshot(path=screenshot_path(tmp_path, "stewards-queue.png"))

    # From the keyboard: the reason, Tab to Admit, Enter.
    reason = first.get_by_role("textbox", name=re.compile("Reason for deciding"))
    reason.focus()
    page.keyboard.type("Matches the published rate and the minutes")
    # Enter in the reason field decides nothing (the row's default button is a disabled one):
    # the page stays, the reason keeps its text and focus, and only the Admit below is recorded.
    page.keyboard.press("Enter")
    expect(reason).to_be_focused()
    expect(reason).to_have_value("Matches the published rate and the minutes")
    page.keyboard.press("Tab")
    expect(first.get_by_role("button", name="Admit")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".messagelist")).to_contain_text("Claim admitted")
    record = AdmissionRecord.objects.get(claim_id=queue["oldest"].pk)
    assert (record.decision, record.steward, record.reason) == (
        "admit",
        steward,
        "Matches the published rate and the minutes",
    )
    # Back on the queue, the decided claim has moved below the ones still waiting.
    expect(page).to_have_url(re.compile(r"/admin/admissions/systemclaim/"))
    expect(page.locator("#result_list tbody tr").nth(0)).to_contain_text("base rate is 5%")


def test_a_steward_decides_on_the_claim_page_with_an_access_key_and_cannot_decide_their_own(page: Page, queue, steward):
    log_in_to_admin(page, "stella", "pw-stella-123")
    page.goto(f"/admin/admissions/systemclaim/{queue['rival'].pk}/change/")
    related = page.locator(".related-claims")
    expect(related).to_contain_text("The Bank of England base rate is 4.75%")
    expect(related).to_contain_text("same slug")
    expect(page.locator(".field-claimed_by")).to_contain_text("agent helper")
    expect(page.locator(".field-source")).to_contain_text("None given")

    page.get_by_label("Reason for the decision").fill("Contradicted by the November minutes")
    press_access_key(page, "r")
    expect(page.locator(".messagelist")).to_contain_text("Claim rejected")
    expect(page.locator(".field-status")).to_contain_text("Rejected")
    expect(page.locator(".field-history")).to_contain_text("steward stella")
    assert AdmissionRecord.objects.get(claim_id=queue["rival"].pk).decision == "reject"

    page.goto(f"/admin/admissions/systemclaim/{queue['own'].pk}/change/")
    expect(page.locator(".decision-panel [role=status]")).to_have_text(
        "You wrote this claim; another steward must decide it."
    )
    expect(page.locator(".decision-panel button")).to_have_count(0)
    press_access_key(page, "a")  # the key does nothing where no decision is offered
    assert not AdmissionRecord.objects.filter(claim_id=queue["own"].pk).exists()


def test_a_promoted_claims_stance_is_rendered_to_an_opted_in_organisations_agent(
    page: Page, queue, steward, foreign_steward, reader_api, settings, tmp_path
):
    claim = queue["oldest"]
    admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="Matches the published rate")
    log_in_to_admin(page, "stella", "pw-stella-123")
    page.goto(f"/admin/admissions/systemclaim/{claim.pk}/change/")
    expect(page.locator(".field-evidence").get_by_role("link", name=re.compile("bankofengland"))).to_be_visible()
    expect(page.locator(".field-evidence")).to_contain_text("document: MPC minutes, November 2026")
    page.screenshot(path=screenshot_path(tmp_path, "stewards-claim.png"), full_page=True)

    press_access_key(page, "p")
    expect(page.get_by_role("heading", name="Promote this claim to a stance")).to_be_visible()
    page.get_by_label("New stance id").fill("uk-interest-rates")
    page.get_by_label("New stance title").fill("UK interest rates")
    page.get_by_label("Reason").fill("Belongs in the knowledge base")
    page.get_by_role("button", name="Promote").click()
    expect(page.locator(".messagelist")).to_contain_text("promoted to the stance uk-interest-rates")
    expect(page.locator(".field-promoted_to")).to_contain_text("uk-interest-rates")

    page.locator(".field-promoted_to").get_by_role("link", name="uk-interest-rates").click()
    expect(page.get_by_role("heading", name=re.compile("Live: agents of opted-in organisations"))).to_be_visible()
    expect(page.locator(".stance-versions")).to_contain_text("The Bank of England base rate is 4.75%")
    expect(page.locator(".stance-panel [role=status]")).to_contain_text("another steward must retire it")
    version = StanceVersion.objects.live().get(stance_id="uk-interest-rates")
    assert version.made_by == steward and Memory.objects.get(pk=claim.pk).superseded_by.stance == version.stance_id

    # An opted-in organisation's agent is shown the stance where the claim was.
    # (The render runs in this process, where the flag can be switched on; the
    # gunicorn under the browser runs with the deployment default, off.)
    settings.SYSTEM_RECALL_ENABLED = True
    response = reader_api.post(
        "/api/v1/render",
        {"place": {"channel": "C-general", "kind": "public", "people": []}, "turn_id": "t-1"},
        format="json",
    )
    assert response.status_code == 200, response.content
    text = response.json()["text"]
    assert "[reviewed stance uk-interest-rates, ledger tier" in text
    assert text.count("The Bank of England base rate is 4.75% after the November meeting") == 1
