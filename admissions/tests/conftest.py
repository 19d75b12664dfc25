"""Fixtures for admissions: claims, a steward in each organisation, and a logged-in admin client."""

from __future__ import annotations

from datetime import date

import pytest
from rest_framework.test import APIClient

from accounts.models import Membership
from accounts.services import agent_create, user_create
from admissions.services import claim_submit

CLAIM = dict(
    body="The Bank of England base rate is 4.75%",
    slug="sys:boe-base-rate",
    entity="bank-of-england",
    transparency="ledger",
    evidence_refs=[{"kind": "url", "ref": "https://www.bankofengland.co.uk/monetary-policy"}],
)


@pytest.fixture
def foreign_steward(other_org):
    """A steward in another organisation: stewards decide claims from everywhere."""
    return user_create(username="fern", organisation=other_org, role=Membership.Role.STEWARD, password="pw-fern-123")


@pytest.fixture
def make_claim(org, member):
    """Submit a claim through the service, as `member` unless `user` or `agent` is given."""

    def make(**overrides):
        fields = dict(CLAIM, organisation=org, as_of=date.today())
        if "agent" not in overrides:
            fields["user"] = member
        fields.update(overrides)
        return claim_submit(**fields)

    return make


@pytest.fixture
def claim(make_claim):
    return make_claim()


@pytest.fixture
def steward_client(client, steward):
    client.force_login(steward)
    return client


@pytest.fixture
def superuser(org):
    """An administrator who is not a steward: the stewards' screens are not theirs."""
    user = user_create(username="root", organisation=org, role=Membership.Role.OWNER, password="pw-root-123")
    user.is_staff = user.is_superuser = True
    user.save()
    return user


@pytest.fixture
def reader(other_org):
    """Another organisation that opted in to system recall: the plane is network-wide."""
    other_org.system_recall_opt_in = True
    other_org.save()
    return other_org


@pytest.fixture
def reader_api(reader):
    """An API client holding a token of one of the reader's agents."""
    _, raw = agent_create(organisation=reader, name="globex-helper")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client
