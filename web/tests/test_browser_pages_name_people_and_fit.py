"""The pages in a person's words, in headless Chromium against gunicorn: people are named by their display
names (an erased person by their handle), and every page fits a 1280 px desktop and a 390 px phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from accounts.people import person_upsert
from memories.models import Channel, SubjectType
from memories.places import place_put
from memories.subjects import subject_erase
from web.tests.factories import seed_memories, shared_fact

pytestmark = pytest.mark.browser

PHONE, DESKTOP = 390, 1280


def log_in(page: Page, username: str, password: str, *, width: int = DESKTOP) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="My memories", level=1)).to_be_visible()


@pytest.fixture
def ula(org, owner, member, agent):
    """A directory person, Ula Lind (handle U42), in a private channel with mona; a fact about her there."""
    ula, _ = person_upsert(organisation=org, handle="U42", display_name="Ula Lind", actor=owner)
    record, _ = place_put(organisation=org, channel="C-design", kind="private", people=["mona"], actor=owner)
    place_put(organisation=org, channel="C-design", kind="private", people=["mona", "U42"], actor=owner)
    fact = shared_fact(
        organisation=org,
        agent=agent,
        channel=record.channel,
        body="Ula reviews every design on Fridays",
        subject_type=SubjectType.USER,
        subject_id=str(ula.user_id),
    )
    return ula, fact


def test_a_member_sees_other_people_by_their_names_and_an_erased_one_by_their_handle(page: Page, org, owner, ula):
    person, fact = ula
    log_in(page, "mona", "pw-mona-123")
    page.goto(f"/me/memories/{fact.pk}")
    about = page.locator("#why dd").nth(1)
    expect(about).to_have_text("Ula Lind")
    page.goto("/me/places")
    place = page.locator(".place[data-channel='C-design']")
    expect(place).to_contain_text("Members: mona, Ula Lind")
    expect(place.locator(".audit")).to_contain_text("Added: Ula Lind")
    expect(place).not_to_contain_text("U42")

    subject_erase(organisation=org, subject_type=SubjectType.USER, subject_id=str(person.user_id), actor=owner)
    page.reload()
    expect(place).to_contain_text("Members: mona, U42")  # erased: the display name is gone, the handle stays
    expect(place).not_to_contain_text("Ula Lind")


def owner_pages(seeded, token_id, place_id) -> list[str]:
    return [
        "/me/memories",
        f"/me/memories/{seeded.workspace.pk}",
        "/me/everything",
        "/me/places",
        "/me/conflicts",
        "/owners/people",
        "/owners/places",
        f"/owners/places/{place_id}",
        "/owners/agents",
        f"/owners/tokens/{token_id}",
        "/owners/organisation",
    ]


def test_every_page_fits_a_desktop_and_a_phone(page: Page, org, owner, member, agent, ula):
    seeded = seed_memories(organisation=org, person=owner, other=member, agent=agent)
    place = Channel.objects.get(organisation=org, external_id="C-design")
    log_in(page, "olive", "pw-olive-123")
    for url in owner_pages(seeded, agent.tokens.get().pk, place.pk):
        assert page.goto(url).status == 200, url
        # The same page laid out again at each width: real layout, no reload needed.
        for width in (DESKTOP, PHONE):
            page.set_viewport_size({"width": width, "height": 900})
            scroll = page.evaluate("document.documentElement.scrollWidth")
            assert scroll <= width, f"{url} is {scroll} px wide at {width} px"
        page.set_viewport_size({"width": DESKTOP, "height": 900})
    # On a phone a person's row is a card with its actions on screen.
    page.set_viewport_size({"width": PHONE, "height": 900})
    page.goto("/owners/people")
    row = page.locator("#people-table tr[data-label='U42']")
    for action in row.get_by_role("link").all():
        box = action.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE, action.inner_text()
