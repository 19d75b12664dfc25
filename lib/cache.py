"""Django's Redis cache, keeping one client per connection pool instead of building one for every command.

Django's `RedisCacheClient.get_client` builds a `redis.Redis` on each call
(about 0.1 ms here: its table of reply callbacks is filled anew), and the rate
gate, the throttle and idempotency call it on every request. A client is only
its pool and that table, and is safe to share between threads, so one per pool
serves every command as well (Django's cache handler gives each thread its own
cache object, so threads do not share it in practice).
"""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class ClientPerPool(RedisCacheClient):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, object] = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = super().get_client(key, write=write)
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = ClientPerPool
