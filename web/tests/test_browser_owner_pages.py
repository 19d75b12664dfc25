"""An owner uses the owners' pages in headless Chromium against gunicorn: people, places, tokens."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from accounts.models import AgentToken, Membership, hash_token
from memories.models import PlaceAudit
from memories.places import place_put
from web.tests.factories import person_fact

pytestmark = pytest.mark.browser


def log_in(page: Page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="My memories", level=1)).to_be_visible()


def log_out(page: Page) -> None:
    page.get_by_role("button", name=re.compile("Log out")).click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()


def test_an_invited_directory_person_keeps_what_was_said_about_them_and_sees_an_owners_change(
    page: Page, org, owner, second_member, agent
):
    place_put(organisation=org, channel="C-finance", kind="private", people=["max"], actor=owner)
    log_in(page, "olive", "pw-olive-123")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="People", exact=True).click()
    page.get_by_label("Handle").fill("U42")
    page.get_by_label("Display name").fill("Ula Lind")
    page.get_by_role("button", name="Add the person").click()
    row = page.locator("#people-table tr[data-label='U42']")
    expect(row).to_contain_text("Ula Lind")
    expect(row).to_contain_text("not invited")
    ula = Membership.objects.select_related("user").get(organisation=org, handle="U42")
    # An agent remembers something about the directory person before they have an account.
    person_fact(organisation=org, person=ula.user, agent=agent, body="Ula prefers written updates to calls")

    # The owner puts Ula in the private channel; the change is audited.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Places", exact=True).click()
    page.get_by_role("link", name="C-finance").click()
    page.get_by_label("People in it").fill("max U42")
    page.get_by_role("button", name="Save the place").click()
    expect(page.locator("#place-audit li").first).to_contain_text("Added: Ula Lind")
    expect(page.locator("#place-audit li").first).to_contain_text("olive (owner)")
    assert PlaceAudit.objects.filter(channel__external_id="C-finance", actor=owner).count() == 2

    # The invitation link is shown once.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="People", exact=True).click()
    row.get_by_role("link", name=re.compile("Invite to sign in")).click()
    page.get_by_label("Username they will sign in with").fill("ula")
    page.get_by_role("button", name="Make the invitation link").click()
    link = page.locator("#invite-link").inner_text()
    assert "/accounts/welcome/" in link
    page.get_by_role("navigation", name="Main").get_by_role("link", name="People", exact=True).click()
    assert link not in page.content()
    log_out(page)

    page.goto(link)
    expect(page.get_by_role("heading", name="Choose your password")).to_be_visible()
    assert "/accounts/welcome/" in page.url and link.rsplit("/", 2)[-2] not in page.url  # the token left the URL
    page.get_by_label("New password", exact=True).fill("ula-long-passphrase")
    page.get_by_label("New password confirmation").fill("ula-long-passphrase")
    page.get_by_role("button", name="Set my password").click()
    expect(page.get_by_role("heading", name="Your password is set")).to_be_visible()
    page.goto(link)
    expect(page.get_by_role("heading", name="This link no longer works")).to_be_visible()

    log_in(page, "ula", "ula-long-passphrase")
    expect(page.locator(".memory-list")).to_contain_text("Ula prefers written updates to calls")
    expect(page.get_by_role("link", name="People")).to_have_count(0)  # the owners' pages are not offered
    page.get_by_role("link", name="My places").click()
    place = page.locator(".place[data-channel='C-finance']")
    expect(place).to_contain_text("Members: max, Ula Lind")
    expect(place.locator(".audit")).to_contain_text("Added: Ula Lind")
    expect(place.locator(".audit")).to_contain_text("olive (owner)")
    assert page.goto("/owners/people").status == 403


def test_an_owner_makes_a_token_restricts_it_takes_the_directory_right_and_revokes_it(page: Page, org, owner, member):
    log_in(page, "olive", "pw-olive-123")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Agents").click()
    page.get_by_label("Agent's name").fill("scribe")
    page.get_by_role("button", name="Add the agent and make its token").click()
    raw = page.locator("#raw-token").inner_text()
    token = AgentToken.objects.get(token_hash=hash_token(raw))

    page.get_by_role("link", name="Restrict it or take the directory right").click()
    assert raw not in page.content()
    page.get_by_label("Restrict this token to the channels and DMs listed below").check()
    page.get_by_label("Channels (external ids, one per line)").fill("C-design\nC-ops")
    page.get_by_label("DMs with these people (handles or usernames)").fill("mona")
    page.get_by_role("button", name="Save where it may act").click()
    expect(page.locator("#token-restriction")).to_have_text("to C-design, C-ops; DMs with mona")

    page.get_by_role("button", name="Take the directory right").click()
    expect(page.locator("#token-directory")).to_have_text("taken")
    page.get_by_role("button", name="Revoke this token").click()
    expect(page.locator("#token-revoked")).not_to_have_text("no")

    token.refresh_from_db()
    assert token.restricted and token.allowed_channels == ["C-design", "C-ops"]
    assert token.allowed_people == [member.pk] and not token.directory and token.revoked_at is not None
    page.get_by_role("link", name="← Agents and tokens").click()
    cells = page.locator(f"tr[data-token-id='{token.pk}']")
    expect(cells).to_contain_text("revoked")
    expect(cells).to_contain_text("taken")
    expect(cells).to_contain_text("2 channels, 1 DM")
    assert raw not in page.content()
