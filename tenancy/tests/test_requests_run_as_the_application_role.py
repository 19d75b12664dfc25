"""Through a real server with the role switch on: requests act as archivist_app, under row-level security.

The server is Django's live server on loopback, in this process, with
`DATABASE_ROLE = "archivist_app"`: every connection it opens does `SET ROLE`,
as the run command's gunicorn does. Probe views (tenancy/tests/urls.py) query
without any tenant filter, on purpose.
"""

from __future__ import annotations

import pytest
import requests
from django.db import connection
from django.test import Client

from accounts.models import Membership
from accounts.services import organisation_create, user_create
from admissions.models import AdmissionRecord
from memories.models import Channel, Memory
from tenancy.sql import APP_ROLE
from tenancy.tests.helpers import tenant_with_everything

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def tenants():
    stewardship = organisation_create(slug="stewardship")
    steward = user_create(username="stew", organisation=stewardship, role=Membership.Role.STEWARD)
    return {
        "acme": tenant_with_everything("acme", steward=steward, decision="challenge"),
        "globex": tenant_with_everything("globex", steward=steward, decision="admit"),
        "steward": steward,
    }


@pytest.fixture
def server(tenants, live_server, settings):
    # After the rows are written: this process's own connection, opened by then,
    # stays the owner's; each connection the server opens from now on switches role.
    settings.ROOT_URLCONF = "tenancy.tests.urls"
    settings.DATABASE_ROLE = APP_ROLE
    settings.EMBEDDER = "none"
    return live_server.url


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_an_agents_request_runs_as_the_app_role_and_an_unfiltered_query_sees_only_its_tenant(server, tenants):
    acme = tenants["acme"]
    answer = requests.get(f"{server}/probe/unfiltered", headers=bearer(acme.token), timeout=10).json()
    assert answer["role"] == APP_ROLE
    assert answer["tenant"] == str(acme.organisation.pk)
    assert answer["memory_organisations"] == [str(acme.organisation.pk)]
    assert answer["channels"] == Channel.objects.filter(organisation=acme.organisation).count()


def test_a_request_with_no_principal_sees_no_row_at_all(server, tenants):
    answer = requests.get(f"{server}/probe/unfiltered-anonymous", timeout=10).json()
    assert answer["role"] == APP_ROLE
    assert (answer["tenant"], answer["memories"], answer["channels"]) == ("", 0, 0)
    assert Memory.objects.count() > 0


def test_a_signed_in_persons_page_runs_as_the_app_role_and_sees_only_their_organisation(server, tenants):
    globex = tenants["globex"]
    client = Client()
    client.force_login(globex.owner)
    cookies = {"sessionid": client.cookies["sessionid"].value}
    answer = requests.get(f"{server}/probe/unfiltered-page", cookies=cookies, timeout=10).json()
    assert answer["role"] == APP_ROLE
    assert answer["memory_organisations"] == [str(globex.organisation.pk)]


def test_the_turn_api_works_under_row_level_security(server, tenants):
    acme, globex = tenants["acme"], tenants["globex"]
    place = {"channel": "D-acme", "kind": "dm", "people": [acme.member.username]}
    headers = bearer(acme.token)
    created = requests.post(
        f"{server}/api/v1/memories", json={"body": "Likes early meetings", "place": place}, headers=headers, timeout=10
    )
    assert created.status_code == 201, created.text
    listed = requests.get(f"{server}/api/v1/memories", {"place": "D-acme"}, headers=headers, timeout=10)
    listed = listed.json()["results"]
    assert {row["id"] for row in listed} >= {created.json()["id"], str(acme.memory.pk)}
    recalled = requests.post(f"{server}/api/v1/recall", json={"place": place}, headers=headers, timeout=10)
    assert recalled.status_code == 200, recalled.text
    rendered = requests.post(
        f"{server}/api/v1/render", json={"place": place, "turn_id": "turn-rls"}, headers=headers, timeout=10
    )
    assert rendered.status_code == 200, rendered.text
    assert "Likes early meetings" in rendered.json()["text"]
    # Another tenant's row by id: 404, the same as a row that does not exist.
    foreign = requests.get(
        f"{server}/api/v1/memories/{globex.memory.pk}", {"place": "D-acme"}, headers=headers, timeout=10
    )
    assert foreign.status_code == 404
    # The admitted claim of another organisation is the documented exception.
    claim = requests.get(f"{server}/api/v1/system-claims/{globex.claim.pk}", headers=headers, timeout=10)
    assert claim.status_code == 200, claim.text


def test_a_request_that_loses_the_database_answers_503_and_writes_nothing(live_server, settings, tenants):
    # As the login role: only it may end its own backend, which is how the fault is made here.
    settings.ROOT_URLCONF = "tenancy.tests.urls"
    acme = tenants["acme"]
    answer = requests.post(f"{live_server.url}/probe/loses-the-database", headers=bearer(acme.token), timeout=10)
    assert answer.status_code == 503
    assert answer.json()["error"] == "unavailable"
    assert answer.headers["Retry-After"]
    connection.close()
    assert not Channel.objects.filter(external_id__in=["C-before-the-fault", "C-after-the-fault"]).exists()


def test_thread_ingest_works_under_row_level_security(server, tenants):
    acme = tenants["acme"]
    place = {"channel": "D-acme", "kind": "dm", "people": [acme.member.username]}
    event = {
        "id": "e-9",
        "role": "user",
        "author": acme.member.username,
        "text": "Call me Ace",
        "time": "2026-11-30T09:00:00Z",
    }
    posted = requests.post(
        f"{server}/api/v1/threads/T-rls/events",
        json={"events": [{**event, "place": place}]},
        headers=bearer(acme.token),
        timeout=10,
    )
    assert posted.status_code in (200, 201), posted.text
    read = requests.get(f"{server}/api/v1/threads/T-rls", headers=bearer(acme.token), timeout=10)
    assert read.status_code == 200 and read.json()["last_sequence"] == 1
    # Another tenant's agent does not find it.
    other = requests.get(f"{server}/api/v1/threads/T-rls", headers=bearer(tenants["globex"].token), timeout=10)
    assert other.status_code == 404


def _form_post(session: requests.Session, url: str, data: dict) -> requests.Response:
    session.get(url, timeout=10)
    token = session.cookies["csrftoken"]
    return session.post(url, data={**data, "csrfmiddlewaretoken": token}, timeout=10, allow_redirects=False)


def test_stewards_decide_and_promote_claims_of_every_organisation_through_their_exception(server, tenants):
    acme, globex = tenants["acme"], tenants["globex"]
    client = Client()
    client.force_login(tenants["steward"])
    session = requests.Session()
    session.cookies.set("sessionid", client.cookies["sessionid"].value)
    queue = session.get(f"{server}/admin/admissions/systemclaim/", timeout=10)
    assert queue.status_code == 200
    assert acme.claim.body in queue.text and globex.claim.body in queue.text
    admitted = _form_post(
        session, f"{server}/admin/admissions/systemclaim/{acme.claim.pk}/decide/admit/", {"reason": "source checked"}
    )
    assert admitted.status_code == 302, admitted.text[:500]
    promoted = _form_post(
        session,
        f"{server}/admin/admissions/systemclaim/{globex.claim.pk}/promote/",
        {"reason": "settled", "new_id": "globex-rates", "new_title": "Globex rates", "new_body": "Monthly."},
    )
    assert promoted.status_code == 302, promoted.text[:500]
    assert AdmissionRecord.objects.filter(claim=acme.claim, decision="admit").exists()
    assert Memory.objects.filter(organisation=globex.organisation, stance="globex-rates").exists()
