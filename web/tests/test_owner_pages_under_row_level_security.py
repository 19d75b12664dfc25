"""The owners' pages through a real server acting as archivist_app, under row-level security, as the run
command's gunicorn does: tokens, places and their audit are protected tables."""

from __future__ import annotations

import re

import pytest
import requests
from django.test import Client

from accounts.models import AgentToken
from accounts.people import person_upsert
from accounts.services import agent_create
from memories.models import PlaceAudit
from memories.places import place_put
from tenancy.sql import APP_ROLE

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def server(org, owner, member, outsider, other_org, live_server, settings):
    # After the fixtures' rows are written: each connection the server opens from now on switches role.
    settings.DATABASE_ROLE = APP_ROLE
    settings.EMBEDDER = "none"
    return live_server.url


class Session:
    """A signed-in browser without a browser: the session cookie, and the CSRF token each form carries."""

    def __init__(self, base: str, user):
        client = Client()
        client.force_login(user)
        self.base = base
        self.http = requests.Session()
        self.http.cookies.set("sessionid", client.cookies["sessionid"].value)

    def get(self, path: str) -> requests.Response:
        return self.http.get(self.base + path, timeout=10, allow_redirects=False)

    def post(self, path: str, form_page: str, data: dict) -> requests.Response:
        page = self.get(form_page).text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        return self.http.post(
            self.base + path,
            data={**data, "csrfmiddlewaretoken": token},
            headers={"Referer": self.base + form_page},
            timeout=10,
            allow_redirects=False,
        )


def test_an_owner_changes_tokens_and_places_as_the_app_role_and_another_owner_cannot(
    server, org, owner, member, outsider, other_org
):
    agent, _ = agent_create(organisation=org, name="zebra-bot")
    token = AgentToken.objects.get(agent=agent)
    person_upsert(organisation=org, handle="U42", display_name="Ula")
    record, _ = place_put(organisation=org, channel="C-fin", kind="private", people=["mona"], actor=owner)
    detail = f"/owners/tokens/{token.pk}"
    place = f"/owners/places/{record.channel.pk}"

    olive = Session(server, owner)
    assert "zebra-bot" in olive.get("/owners/agents").text
    answer = olive.post(f"{detail}/restrict", detail, {"restricted": "on", "channels": "C-fin", "people": "U42"})
    assert answer.status_code == 302, answer.text[-2000:]
    assert olive.post(f"{detail}/directory", detail, {"directory": "take"}).status_code == 302
    assert olive.post(place, place, {"kind": "private", "people": "mona U42"}).status_code == 302
    assert "Added: Ula" in olive.get(place).text

    otto = Session(server, outsider)
    assert "zebra-bot" not in otto.get("/owners/agents").text and "C-fin" not in otto.get("/owners/places").text
    assert otto.get(detail).status_code == 404 and otto.get(place).status_code == 404
    assert otto.post(f"{detail}/revoke", "/owners/agents", {}).status_code == 404

    token.refresh_from_db()
    assert token.restricted and token.allowed_channels == ["C-fin"] and not token.directory
    assert token.revoked_at is None
    assert PlaceAudit.objects.filter(channel=record.channel).count() == 2


def test_an_invitation_link_sets_a_password_as_the_app_role(server, org, owner):
    person, _ = person_upsert(organisation=org, handle="U42", display_name="Ula")
    invite = f"/owners/people/{person.user_id}/invite"
    page = Session(server, owner).post(invite, invite, {"username": "ula"}).text
    link = re.search(r'<code id="invite-link">([^<]+)</code>', page).group(1)

    anonymous = requests.Session()
    form = anonymous.get(link, timeout=10)
    assert "Choose your password" in form.text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    done = anonymous.post(
        form.url,
        data={"new_password1": "ula-passphrase", "new_password2": "ula-passphrase", "csrfmiddlewaretoken": token},
        headers={"Referer": form.url},
        timeout=10,
    )
    assert "Your password is set" in done.text
    person.user.refresh_from_db()
    assert person.user.check_password("ula-passphrase")
