"""Rate limits per principal, counted in the shared cache."""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.http import JsonResponse
from rest_framework.throttling import SimpleRateThrottle

from lib.metrics import refused
from lib.scripts import unbound_script

logger = logging.getLogger(__name__)


# One principal's requests of the last window as a sorted set (score: the time): drop those that left the
# window, count the rest, and add this request if it fits; a refusal answers the oldest time left.
_SLIDE = """
local function slide(key, now, window, limit, member)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', tonumber(now) - window)
  if redis.call('ZCARD', key) < limit then
    redis.call('ZADD', key, now, member)
    redis.call('PEXPIRE', key, math.ceil(window * 1000))
    return {1, ''}
  end
  return {0, redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]}
end
"""
_SLIDING_LOG_SCRIPT = unbound_script(  # its SHA once, not per request
    _SLIDE + "return slide(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4])"
)
# The token rate gate: first, when a third key is given, the client address's count of bad tokens (barred at
# or past its limit, nothing counted); then the fixed window (count, the key expiring with its window), then,
# within it, the sliding log: a Bearer request's checks in one round trip, atomic across workers.
_GATE_THEN_LOG_SCRIPT = unbound_script(
    _SLIDE
    + """
if KEYS[3] and tonumber(redis.call('GET', KEYS[3]) or '0') >= tonumber(ARGV[6]) then return {0, 0, '', 1} end
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
if count > tonumber(ARGV[2]) then return {count, 0, '', 0} end
local verdict = slide(KEYS[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[2]), ARGV[5])
return {count, verdict[1], verdict[2], 0}
"""
)


def throttled_response(wait: int, detail: str = "") -> JsonResponse:
    """A 429 refused before any view runs, in the one error shape, with its Retry-After in seconds."""
    detail = detail or f"Request was throttled. Expected available in {wait} seconds."
    response = JsonResponse({"error": "throttled", "detail": detail, "fields": {}}, status=429)
    response["Retry-After"] = str(wait)
    return response


def presented_digest(header: str) -> str:
    """A hash of the token an Authorization header presents: the rate gate's and the log's keys name it."""
    return hashlib.sha256(header[7:].strip().encode()).hexdigest()[:32]


def log_key(header: str) -> str:
    """The cache key of one presented Bearer token's sliding log: the rate gate checks it before
    authentication (`config.middleware`) and the throttle after, so both keep one log."""
    return f"throttle_bearer_{presented_digest(header)}"


@dataclass(frozen=True)
class LogVerdict:
    """What a request's sliding log said, checked before authentication: the throttle answers from it."""

    now: float
    rate: tuple[int, int]  # (requests, seconds) it was checked against
    allowed: bool
    oldest: float | None  # on a refusal, the time of the oldest request still in the window

    @classmethod
    def answered(cls, *, now: float, rate: tuple[int, int], allowed, oldest) -> LogVerdict:
        """The verdict from the script's answer (1 or 0, and the oldest time as text, empty when allowed)."""
        return cls(now=now, rate=rate, allowed=bool(allowed), oldest=float(oldest) if oldest else None)


def log_entry(now: float) -> list[str]:
    """A request's score and member in a sliding log: its time, and the time made unique."""
    return [repr(now), f"{now!r}:{uuid.uuid4().hex}"]


def gate_then_log(
    *, gate: str, log: str, rate: tuple[int, int], now: float, client, failures: tuple[str, int] | None = None
) -> tuple[int, LogVerdict, bool]:
    """A Bearer request counted in its window under `gate` and, if within the rate, checked and added in its
    sliding log under `log` (full cache keys): one script. With `failures` (an address's bad-token key and its
    limit), an address at its limit is barred first and nothing is counted. The window's count, the log's
    verdict, and whether the address is barred."""
    limit, period = rate
    score, member = log_entry(now)
    keys = [gate, log]
    args: list[str | int | float] = [period + 1, limit, score, period, member]
    if failures is not None:
        keys.append(failures[0])
        args.append(failures[1])
    count, allowed, oldest, barred = _GATE_THEN_LOG_SCRIPT(keys=keys, args=args, client=client)
    return int(count), LogVerdict.answered(now=now, rate=rate, allowed=allowed, oldest=oldest), bool(barred)


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
        if principal.agent is not None:
            return log_key(request.META.get("HTTP_AUTHORIZATION", ""))  # the log the rate gate checks too
        return self.cache_format % {"scope": self.scope, "ident": f"user:{principal.user.pk}"}

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
        atomic across web workers, and no history list read and rewritten on every request. A Bearer call's
        log was checked with the rate gate's count, before authentication (`config.middleware`): its verdict."""
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        verdict = getattr(request, "log_verdict", None) if request.principal.agent is not None else None
        if verdict is None or verdict.rate != (self.num_requests, self.duration):
            if request.principal.agent is not None:
                logger.info("no rate gate verdict for %s: the throttle checks the log itself", request.path)
            verdict = self._checked_here()
        self.now = verdict.now
        if verdict.allowed:
            return True
        self.oldest = verdict.oldest
        refused("token_rate" if request.principal.agent is not None else "person_rate")
        return self.throttle_failure()

    def _checked_here(self) -> LogVerdict:
        now = self.timer()
        key = self.cache.make_and_validate_key(self.key)
        client = self.cache._cache.get_client(key, write=True)  # type: ignore[attr-defined]  # RedisCache
        score, member = log_entry(now)
        allowed, oldest = _SLIDING_LOG_SCRIPT(
            keys=[key], args=[score, self.duration, self.num_requests, member], client=client
        )
        return LogVerdict.answered(now=now, rate=(self.num_requests, self.duration), allowed=allowed, oldest=oldest)

    def wait(self):
        oldest = getattr(self, "oldest", None)
        if oldest is None:
            return super().wait()
        return max(0.0, self.duration - (self.now - oldest))
