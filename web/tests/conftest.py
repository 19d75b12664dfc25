"""Fixtures for the pages' tests. The browser fixtures live in web.tests.browser, a plugin for the
whole suite: importing them here would register a second, conftest-level copy of the session-scoped
browser, and a second Playwright cannot start while the first is running."""

import pytest

from web.tests.factories import Seeded, seed_memories


@pytest.fixture
def seeded(org, member, second_member, agent) -> Seeded:
    """mona's memories in every scope, a channel she is not in, and max's person fact."""
    return seed_memories(organisation=org, person=member, other=second_member, agent=agent)
