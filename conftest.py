"""Shared fixtures: personas in two organisations, and a factory for memories."""

from __future__ import annotations

import fcntl
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import pytest

from accounts.models import Membership
from accounts.services import agent_create, organisation_create, user_create
from memories.models import Author, Bucket, SourceKind
from memories.tests.remembered import remembered
from tests import database_template

# The browser harness: gunicorn on the test database, Chromium, a screenshot on failure.
pytest_plugins = ["web.tests.browser", "tests.leftovers", "tests.order"]


@dataclass
class WorkerDatabase:
    name: str
    cloned: bool  # copied from the migrated template (tests/database_template.py) rather than migrated here
    lock: TextIO


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings, django_db_blocker):
    """Test databases are made one at a time on this machine: `make test` runs several pytest-xdist workers,
    each with its own database in the one cluster, cloned from a migrated template when one exists for this code;
    the first to find none migrates (the first migration creates the cluster's roles, which two workers must not
    both try at once) and leaves the template. Released once this worker's database is ready (`django_db_setup`)."""
    from django.conf import settings

    lock = (Path(settings.DATA_DIR) / "test-databases.lock").open("w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    name = settings.DATABASES["default"]["TEST"]["NAME"]
    with django_db_blocker.unblock():
        cloned = database_template.clone_from_template(name)
    yield WorkerDatabase(name=name, cloned=cloned, lock=lock)
    lock.close()


@pytest.fixture(scope="session")
def django_db_keepdb(django_db_modify_db_settings) -> bool:
    """A database cloned from the template is used as it is (`migrate` only confirms it is current)."""
    return django_db_modify_db_settings.cloned


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_modify_db_settings, django_db_blocker):
    database = django_db_modify_db_settings
    if not database.cloned:
        with django_db_blocker.unblock():
            database_template.save_as_template(database.name)
    fcntl.flock(database.lock, fcntl.LOCK_UN)
    yield
    with django_db_blocker.unblock():
        if database.cloned:  # pytest-django drops only the databases it created
            database_template.drop(database.name)
        else:
            database_template.end_other_sessions(database.name)


# Failure counts in Redis, per cache: sign-in failures per account, and unknown tokens per client address (every
# test calls from 127.0.0.1, so one test's wrong tokens would otherwise bar the next test's calls).
FAILURE_COUNTS = (("signin", "signin:*"), ("default", "*badtoken:*"))


def _clear_failure_counts() -> None:
    from django.core.cache import caches

    for alias, pattern in FAILURE_COUNTS:
        try:
            client = caches[alias]._cache.get_client(write=True)
            keys = list(client.scan_iter(pattern))
            if keys:
                client.delete(*keys)
        except Exception:  # noqa: BLE001 - a test that stopped Redis has no counts to clear
            pass


@pytest.fixture(autouse=True)
def _failure_counts_cleared():
    """Failure counts live in Redis, outside every test's transaction: each test starts with none."""
    _clear_failure_counts()
    yield
    _clear_failure_counts()


@pytest.fixture
def org(db):
    return organisation_create(slug="acme", name="Acme")


@pytest.fixture
def other_org(db):
    return organisation_create(slug="globex", name="Globex")


@pytest.fixture
def owner(org):
    return user_create(username="olive", organisation=org, role=Membership.Role.OWNER, password="pw-olive-123")


@pytest.fixture
def member(org):
    return user_create(username="mona", organisation=org, role=Membership.Role.MEMBER, password="pw-mona-123")


@pytest.fixture
def second_member(org):
    return user_create(username="max", organisation=org, role=Membership.Role.MEMBER, password="pw-max-123")


@pytest.fixture
def steward(org):
    return user_create(username="stella", organisation=org, role=Membership.Role.STEWARD, password="pw-stella-123")


@pytest.fixture
def outsider(other_org):
    return user_create(username="otto", organisation=other_org, role=Membership.Role.OWNER, password="pw-otto-123")


@pytest.fixture
def agent_with_token(org):
    """(agent, raw bearer token) in `org`."""
    return agent_create(organisation=org, name="helper")


@pytest.fixture
def agent(agent_with_token):
    return agent_with_token[0]


@pytest.fixture
def make_memory(org, member):
    """Write a memory through the service; keyword arguments override the defaults."""

    def make(**overrides):
        fields = dict(
            organisation=org,
            bucket=Bucket.USER,
            author=Author.PERSON,
            body="Prefers tea to coffee",
            source_kind=SourceKind.PERSON,
            owner=member,
            written_by=member,
        )
        fields.update(overrides)
        return remembered(**fields)

    return make
