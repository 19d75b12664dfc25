"""Fixtures for the pages' tests. The browser fixtures live in web.tests.browser, a plugin for the
whole suite; they are named here too, for test modules that import them from this module."""

import pytest

from web.tests.browser import chromium, gunicorn_server, page
from web.tests.factories import Seeded, seed_memories

__all__ = ["chromium", "gunicorn_server", "page"]


@pytest.fixture
def seeded(org, member, second_member, agent) -> Seeded:
    """mona's memories in every scope, a channel she is not in, and max's person fact."""
    return seed_memories(organisation=org, person=member, other=second_member, agent=agent)
