"""Rate limits per principal, counted in the shared cache."""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from lib.scripts import unbound_script

logger = logging.getLogger(__name__)


# One principal's requests of the last window as a sorted set (score: the time): drop those that left
# the window, count the rest, and add this request if it fits; a refusal answers the oldest time left.
_SLIDING_LOG = """
local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) < limit then
  redis.call('ZADD', key, ARGV[1], ARGV[4])
  redis.call('PEXPIRE', key, math.ceil(window * 1000))
  return {1, ''}
end
return {0, redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]}
"""
_SLIDING_LOG_SCRIPT = unbound_script(_SLIDING_LOG)  # its SHA once, not per request


class PrincipalRateThrottle(SimpleRateThrottle):
    """Requests per token (an agent) or per signed-in person, at `MEMORY_API_RATE`; past it, 429 with Retry-After.

    The counts live in the shared cache (Redis), so every web worker counts the
    same requests. If the cache cannot be reached the request is let through
    and the failure logged: an outage of the limiter must not become one of the API.
    """

    scope = "principal"
    duration: int  # both set by SimpleRateThrottle from the rate
    num_requests: int

    def get_rate(self):
        return settings.MEMORY_API_RATE

    def get_cache_key(self, request, view):
        principal = getattr(request, "principal", None)
        if principal is None:
            return None
        ident = f"token:{request.auth.pk}" if principal.agent is not None else f"user:{principal.user.pk}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request, view):
        try:
            if not hasattr(getattr(self.cache, "_cache", None), "get_client"):
                return super().allow_request(request, view)  # not Redis: DRF's own read-and-write of the log
            return self._allow_in_one_round_trip(request, view)
        except Exception as error:  # noqa: BLE001 - any cache failure lets the request through
            logger.warning("rate limiter unavailable, letting %s through: %s", request.path, error)
            return True

    def _allow_in_one_round_trip(self, request, view) -> bool:
        """DRF's exact sliding log, kept in Redis as a sorted set and checked by one script: one round trip,
        atomic across web workers, and no history list read and rewritten on every request."""
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        key = self.cache.make_and_validate_key(self.key)
        client = self.cache._cache.get_client(key, write=True)  # type: ignore[attr-defined]  # RedisCache
        allowed, oldest = _SLIDING_LOG_SCRIPT(
            keys=[key],
            args=[repr(self.now), self.duration, self.num_requests, f"{self.now!r}:{uuid.uuid4().hex}"],
            client=client,
        )
        if allowed:
            return True
        self.oldest = float(oldest)
        return self.throttle_failure()

    def wait(self):
        oldest = getattr(self, "oldest", None)
        if oldest is None:
            return super().wait()
        return max(0.0, self.duration - (self.now - oldest))
