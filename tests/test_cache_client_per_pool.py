"""The cache keeps one Redis client per connection pool rather than building one per command (`lib.cache`)."""

from __future__ import annotations

from django.core.cache import cache
from django.core.cache.backends.redis import RedisCacheClient

from lib.cache import ClientPerPool


def test_every_command_shares_one_client():
    client = cache._cache
    assert isinstance(client, ClientPerPool)
    assert client.get_client("a", write=True) is client.get_client("b", write=True)
    assert client.get_client("a") is client.get_client("a", write=True)  # one server: reads use the writers' pool


def test_django_builds_one_per_command():
    """Control: the client this replaces builds a new one each time, which the first test would catch."""
    plain = RedisCacheClient(cache._servers, **cache._options)
    assert plain.get_client("a", write=True) is not plain.get_client("a", write=True)


def test_the_shared_client_serves_commands_in_turn():
    cache.set("client-per-pool", 1)
    assert cache.incr("client-per-pool") == 2
    assert cache.get("client-per-pool") == 2
    cache.delete("client-per-pool")
