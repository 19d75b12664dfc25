"""A pytest plugin (loaded by the root conftest): the longest tests are handed out first.

pytest-xdist gives each worker the next test as it frees up, in collection order among units of one size, so a
test that starts a server and comes last keeps one worker busy while the others wait at the end of the run.
Modules whose tests drive Chromium, start processes (`slow`) or share one worker (`xdist_group`) go first,
each module kept whole so its module fixtures are made once.
"""

from __future__ import annotations

import pytest

FIRST, EARLY, REST = 0, 1, 2


def weight(item: pytest.Item) -> int:
    if "chromium" in getattr(item, "fixturenames", ()):
        return FIRST
    if item.get_closest_marker("slow") or item.get_closest_marker("xdist_group"):
        return EARLY
    return REST


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    module_weight: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        module_weight[module] = min(module_weight.get(module, REST), weight(item))
    items.sort(key=lambda item: module_weight[item.nodeid.split("::")[0]])  # stable: each module stays in order
