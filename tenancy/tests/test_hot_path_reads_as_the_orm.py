"""The hot path's token and place reads (`lib.hot_path`) give what the ORM reads, still under row-level security:
the same instances, the same refusals, nothing of another organisation."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.db.models.sql.compiler import SQLCompiler
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.auth import token_authenticate
from accounts.models import AgentToken, Membership, hash_token
from accounts.services import agent_create, organisation_create, user_create
from memories.places import PLACE_OF_TENANT_STATEMENT, place_recorded, place_records, record_from_row, record_of
from tenancy.sql import APP_ROLE, TENANT_SETTING

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=[True, False], ids=["hot path", "plain"])
def hot_path(request, settings):
    settings.HOT_PATH = request.param
    return request.param


def as_tenant(organisation) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        cursor.execute("SELECT set_config(%s, %s, true)", [TENANT_SETTING, str(organisation.pk)])


def field_values(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


@pytest.fixture
def acme():
    return organisation_create(slug="acme")


@pytest.fixture
def globex():
    return organisation_create(slug="globex")


def test_the_token_read_builds_what_the_orm_reads_and_compiles_only_on_the_plain_path(acme, monkeypatch, hot_path):
    agent, raw = agent_create(organisation=acme, name="helper")
    AgentToken.objects.filter(agent=agent).update(restricted=True, allowed_channels=["G-team"], last_used_at=None)
    expected = AgentToken.objects.select_related("agent", "organisation").get(agent=agent)
    compiled = []
    original = SQLCompiler.as_sql
    monkeypatch.setattr(SQLCompiler, "as_sql", lambda self, *a, **k: compiled.append(1) or original(self, *a, **k))
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
        token = token_authenticate(token_hash=hash_token(raw), now=timezone.now())
    assert bool(compiled) is not hot_path  # the hot path compiles nothing per request
    assert field_values(token) == field_values(expected)
    assert field_values(token.agent) == field_values(expected.agent)
    assert field_values(token.organisation) == field_values(expected.organisation)
    assert not token._state.adding and token._state.db == "default"
    # The positive control: the ORM's read of the same row does compile, on either path.
    AgentToken.objects.filter(pk=token.pk).first()
    assert compiled


def test_a_revoked_or_expired_token_is_refused_over_the_api_with_the_same_answer(acme, settings, hot_path):
    settings.EMBEDDER = "none"
    agent, raw = agent_create(organisation=acme, name="helper")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/places").status_code == 200  # the positive control: usable, it works
    AgentToken.objects.filter(agent=agent).update(revoked_at=timezone.now())
    revoked = client.get("/api/v1/places")
    AgentToken.objects.filter(agent=agent).update(revoked_at=None, expires_at=timezone.now())
    expired = client.get("/api/v1/places")
    for refused in (revoked, expired):
        assert refused.status_code == 401
        assert refused.json()["detail"] == "The token is unknown, revoked or expired."


def tenant_place(channel: str):
    """The hot path's place read (sent after the token's statement) for the tenant this transaction set."""
    with connection.cursor() as cursor:
        cursor.execute(PLACE_OF_TENANT_STATEMENT, [channel])
        row = cursor.fetchone()
    return record_from_row(row, connection) if row is not None else None


def test_the_place_read_with_the_token_reads_what_the_orm_reads(acme, globex):
    mona = user_create(username="mona", organisation=acme, role=Membership.Role.MEMBER)
    user_create(username="max", organisation=acme, role=Membership.Role.MEMBER)
    Membership.objects.filter(user=mona).update(handle="mona.h")
    place_recorded(organisation=acme, channel="G-team", kind="private", people=["mona", "max"])
    place_recorded(organisation=acme, channel="D-mona", kind="dm", people=["mona"])
    place_recorded(organisation=acme, channel="C-general", kind="public", people=[])
    for channel in ("G-team", "D-mona", "C-general"):
        with transaction.atomic():
            as_tenant(acme)
            read = tenant_place(channel)
            expected = record_of(place_records(organisation=acme).get(external_id=channel))
        assert read.members == expected.members, channel
        assert field_values(read.channel) == field_values(expected.channel)
        if channel == "G-team":
            assert [member.label for member in read.members] == ["mona.h", "max"]
    assert [member.label for member in read.members] == []


def test_the_place_read_with_the_token_finds_nothing_of_another_organisation(acme, globex):
    place_recorded(organisation=globex, channel="G-secret", kind="private", people=[])
    with transaction.atomic():
        as_tenant(acme)
        assert tenant_place("G-secret") is None  # hidden: the statement names the tenant, and so does RLS
        assert tenant_place("G-unknown") is None
    with transaction.atomic():
        as_tenant(globex)
        assert tenant_place("G-secret") is not None  # the positive control
