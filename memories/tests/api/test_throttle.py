"""Requests are throttled per token: past the rate, 429 with a Retry-After."""

from __future__ import annotations

from django.core.cache import cache

from memories.tests.api.helpers import recall


def test_past_the_rate_a_token_gets_429_with_retry_after_and_others_do_not(
    agent_api, second_agent_api, general, settings
):
    settings.MEMORY_API_RATE = "3/min"
    cache.clear()
    statuses = [recall(agent_api, general, "tea").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    refused = recall(agent_api, general, "tea")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert refused.json()["error"] == "throttled"
    assert recall(second_agent_api, general, "tea").status_code == 200
    cache.clear()
