"""A person with seeded memories uses the pages in headless Chromium against gunicorn."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from memories.models import Memory
from memories.services import memory_redact
from web.tests.factories import SCRIPT_BODY

pytestmark = pytest.mark.browser

PASSWORDS = {"mona": "pw-mona-123", "max": "pw-max-123"}


def log_in(page: Page, username: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORDS[username])
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/me/memories$"))
    expect(page.get_by_role("heading", name="My memories", level=1)).to_be_visible()


def test_a_person_finds_a_memory_sees_why_and_corrects_it(page: Page, seeded):
    log_in(page, "mona")
    page.get_by_label("Search my memories").fill("morning meetings")
    page.get_by_role("button", name="Search").click()
    results = page.locator(".memory-list > li")
    expect(results).to_have_count(1)
    expect(results.first).to_contain_text("Prefers morning meetings before ten")

    results.first.get_by_role("link", name=re.compile("Why is this remembered")).click()
    why = page.locator("#why")
    expect(why.get_by_role("heading", name="Why is this remembered")).to_be_visible()
    expect(why).to_contain_text("Inferred by an agent: helper")
    expect(why).to_contain_text("run-8812")
    source = why.get_by_role("link", name="https://chat.example.com/archives/C42/p1700000000")
    expect(source).to_have_attribute("href", "https://chat.example.com/archives/C42/p1700000000")
    expect(page.locator("#usage-summary")).to_contain_text("Not yet given to an agent")

    page.get_by_role("link", name="Correct it").click()
    expect(page.locator("#old-body")).to_have_text("Prefers morning meetings before ten")
    page.get_by_label("The corrected memory").fill("Prefers meetings after eleven")
    page.get_by_role("button", name="Save the correction").click()

    expect(page.locator("#memory-body")).to_have_text("Prefers meetings after eleven")
    chain = page.locator(".chain > li")
    expect(chain).to_have_count(2)
    expect(chain.nth(0)).to_contain_text("Prefers morning meetings before ten")
    expect(chain.nth(1)).to_contain_text("Prefers meetings after eleven")
    seeded.person_fact.refresh_from_db()
    assert seeded.person_fact.superseded_by is not None
    assert seeded.person_fact.superseded_by.body == "Prefers meetings after eleven"


def test_a_person_forgets_a_memory_and_sees_the_receipt(page: Page, seeded):
    log_in(page, "mona")
    page.goto(f"/me/memories/{seeded.forgettable.pk}")
    page.get_by_role("link", name="Forget it…").click()
    expect(page.get_by_role("heading", name="Forget this memory?")).to_be_visible()
    assert Memory.objects.get(pk=seeded.forgettable.pk).redacted_at is None  # asking is not erasing

    page.get_by_label("Why it should be forgotten").fill("No longer true")
    page.get_by_role("button", name="Forget it").click()

    expect(page.get_by_role("heading", name="Forgotten")).to_be_visible()
    receipt = page.locator(".card--receipt")
    expect(receipt).to_contain_text(str(seeded.forgettable.pk))
    expect(receipt).to_contain_text("No longer true")
    expect(receipt).to_contain_text("you")
    erased = Memory.objects.get(pk=seeded.forgettable.pk)
    assert erased.redacted_at is not None and erased.body == ""

    page.goto("/me/memories")
    expect(page.locator(".memory-list")).not_to_contain_text("Leeds half marathon")


def test_a_body_holding_markup_shows_as_text(page: Page, seeded):
    problems = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    log_in(page, "mona")
    for url in ("/me/memories", f"/me/memories/{seeded.script.pk}"):
        response = page.goto(url)
        assert "script-src 'self'" in response.headers["content-security-policy"]
        # The stylesheet arrived from our own origin and applied under the CSP.
        assert page.evaluate("getComputedStyle(document.querySelector('.brand__mark')).width") == "32px"
        body = page.locator(".body-text", has_text="window.__pwned = 1").first
        expect(body).to_have_text(SCRIPT_BODY)
        assert body.locator("script, img, a, b").count() == 0
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.locator("img[src='x'], img[src*='evil.example']").count() == 0
    assert problems == []


def test_a_second_person_does_not_see_the_first_ones_person_facts(page: Page, seeded):
    log_in(page, "max")
    listing = page.locator("main")
    expect(listing).to_contain_text("Is moving to Lisbon in May")
    expect(listing).not_to_contain_text("Prefers morning meetings before ten")
    expect(listing).not_to_contain_text("Leeds half marathon")

    page.get_by_label("Search my memories").fill("morning")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("heading", name="Nothing matches")).to_be_visible()

    response = page.goto(f"/me/memories/{seeded.person_fact.pk}")
    assert response is not None and response.status == 404


def test_the_export_holds_exactly_what_the_page_showed(page: Page, seeded, member):
    memory_redact(memory=seeded.forgettable, reason="No longer true", actor=member)
    log_in(page, "mona")
    page.get_by_role("link", name="Everything about me").click()
    rows = page.locator("#export-table tbody tr")
    expect(rows).to_have_count(2)
    shown = {}
    for index in range(rows.count()):
        row = rows.nth(index)
        shown[row.get_attribute("data-memory-id")] = row.locator("td").first.inner_text()

    with page.expect_download() as info:
        page.get_by_role("link", name="Download it as JSON").click()
    download = info.value
    assert download.suggested_filename.startswith("archivist-everything-about-mona-")
    document = json.loads(Path(download.path()).read_text(encoding="utf-8"))

    assert document["subject_type"] == "user" and document["subject_id"] == str(member.pk)
    assert document["count"] == len(document["memories"]) == len(shown)
    exported = {item["id"]: item for item in document["memories"]}
    assert set(exported) == set(shown) == {str(seeded.person_fact.pk), str(seeded.forgettable.pk)}
    assert exported[str(seeded.person_fact.pk)]["body"] == "Prefers morning meetings before ten"
    assert shown[str(seeded.person_fact.pk)].startswith("Prefers morning meetings before ten")
    erased = exported[str(seeded.forgettable.pk)]
    assert erased["body"] == "" and erased["receipt"]["reason"] == "No longer true"
    assert "No longer true" in shown[str(seeded.forgettable.pk)]
    assert "Leeds" not in json.dumps(document)


def test_erasing_everything_asks_for_the_word_then_shows_counts_and_receipts(page: Page, seeded):
    log_in(page, "mona")
    page.goto("/me/everything")
    page.get_by_label('Type "erase" to confirm').fill("yes")
    page.get_by_role("button", name="Erase everything about me").click()
    expect(page.locator(".field__error")).to_contain_text('Type the word "erase"')
    assert Memory.objects.filter(pk=seeded.person_fact.pk, redacted_at__isnull=True).exists()

    page.get_by_label('Type "erase" to confirm').fill("erase")
    page.get_by_role("button", name="Erase everything about me").click()
    expect(page.get_by_role("heading", name="Everything about you is erased")).to_be_visible()
    expect(page.locator("#count-erased")).to_have_text("2")
    receipts = page.locator("#receipts tbody tr")
    expect(receipts).to_have_count(2)
    expect(page.locator("#receipts")).to_contain_text(str(seeded.person_fact.pk))
    expect(page.locator("#receipts")).to_contain_text(str(seeded.forgettable.pk))
    assert not Memory.objects.filter(pk__in=[seeded.person_fact.pk, seeded.forgettable.pk], body__gt="").exists()

    page.goto("/me/memories")
    expect(page.locator("main")).not_to_contain_text("morning meetings")
    expect(page.locator("main")).to_contain_text("The team ships releases on Thursdays")
