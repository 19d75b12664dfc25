"""An agent's turn acts only in a place of its own organisation, and a body naming a place badly is refused by name;
the place read in the token's round trip (`lib.hot_path`) is under row-level security too."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.auth import token_authenticate
from accounts.models import AgentToken, Membership, hash_token
from accounts.services import agent_create, organisation_create, user_create
from lib.hot_path import ReadWithToken
from memories.places import PLACE_OF_TENANT_STATEMENT, place_recorded, record_from_row
from tenancy.sql import APP_ROLE

pytestmark = pytest.mark.django_db(transaction=True)

GENERAL = {"channel": "C-general", "kind": "public", "people": []}


@pytest.fixture
def acme():
    acme = organisation_create(slug="acme")
    place_recorded(organisation=acme, channel="C-general", kind="public", people=[])
    return acme


@pytest.fixture
def globex():
    return organisation_create(slug="globex")


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def read_with(raw: str, channel: str) -> list:
    """The token's statement with the place read after it, as the application role: what `take` was given."""
    taken: list = []
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        read = ReadWithToken(
            sql=PLACE_OF_TENANT_STATEMENT,
            params=(channel,),
            take=lambda row: taken.append(record_from_row(row, connection) if row is not None else None),
        )
        token_authenticate(token_hash=hash_token(raw), now=timezone.now(), with_token=read)
    return taken


def test_the_place_read_with_a_token_is_its_organisations_and_none_without_a_usable_token(acme, globex):
    mona = user_create(username="mona", organisation=acme, role=Membership.Role.MEMBER)
    ghost = user_create(username="ghost", organisation=globex, role=Membership.Role.MEMBER)
    place_recorded(organisation=acme, channel="G-team", kind="private", people=["mona"])
    place_recorded(organisation=globex, channel="G-team", kind="private", people=["ghost"])
    place_recorded(organisation=globex, channel="G-secret", kind="private", people=["ghost"])
    acme_agent, acme_raw = agent_create(organisation=acme, name="helper")
    _, globex_raw = agent_create(organisation=globex, name="other")
    (team,) = read_with(acme_raw, "G-team")
    assert team.channel.organisation_id == acme.pk and team.member_ids == (str(mona.pk),)
    assert read_with(acme_raw, "G-secret") == [None]  # another organisation's place: no row
    # The positive control: the other organisation's token reads its own.
    (theirs,) = read_with(globex_raw, "G-secret")
    assert theirs.channel.organisation_id == globex.pk and theirs.member_ids == (str(ghost.pk),)
    # A revoked token sets no tenant, and the read is not taken at all.
    AgentToken.objects.filter(agent=acme_agent).update(revoked_at=timezone.now())
    assert read_with(acme_raw, "G-team") == []


def test_nobody_acts_in_a_place_of_another_organisation_of_the_same_id(acme, globex):
    user_create(username="ghost", organisation=globex, role=Membership.Role.MEMBER)
    place_recorded(organisation=globex, channel="G-secret", kind="private", people=["ghost"])
    agent, raw = agent_create(organisation=acme, name="helper")
    AgentToken.objects.filter(agent=agent).update(directory=False)  # it may not record a place either
    place = {"channel": "G-secret", "kind": "private", "people": ["ghost"]}
    refused = bearer(raw).post("/api/v1/recall", {"question": "tea", "place": place}, format="json")
    assert refused.status_code == 404, refused.content
    # The positive control: the organisation whose place it is acts there.
    _, theirs = agent_create(organisation=globex, name="other")
    assert bearer(theirs).post("/api/v1/recall", {"question": "tea", "place": place}, format="json").status_code == 200


BODIES = {
    "lone surrogate": ('{"question": "tea", "place": {"channel": "C-\\ud800", "kind": "public"}}', "\\ud800"),
    "malformed": ('{"question": "tea", "place": {"channel": "C-general"', "json"),
    "slash": ('{"question": "tea", "place": {"channel": "C/general", "kind": "public"}}', "channel"),
    "not an object": ('{"question": "tea", "place": "C-general"}', "place"),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_body_naming_a_place_badly_is_refused_naming_the_field(acme, name):
    _, raw = agent_create(organisation=acme, name="helper")
    body, named = BODIES[name]
    refused = bearer(raw).post("/api/v1/recall", body, content_type="application/json")
    assert refused.status_code == 400, refused.content
    assert named in refused.content.decode()


def test_a_revoked_token_naming_a_place_is_401(acme):
    agent, raw = agent_create(organisation=acme, name="helper")
    client = bearer(raw)
    assert client.post("/api/v1/recall", {"question": "tea", "place": GENERAL}, format="json").status_code == 200
    AgentToken.objects.filter(agent=agent).update(revoked_at=timezone.now())
    refused = client.post("/api/v1/recall", {"question": "tea", "place": GENERAL}, format="json")
    assert refused.status_code == 401
    assert refused.json()["detail"] == "The token is unknown, revoked or expired."
