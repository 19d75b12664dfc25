"""The rate gate: each Bearer token's requests and each address's bad tokens, counted in Redis before the
database is touched (the middleware), and each principal's sliding log the DRF throttle answers from."""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import time
import uuid
from dataclasses import dataclass
from typing import NamedTuple

from django.conf import settings
from django.core.cache import cache
from django.http import JsonResponse
from rest_framework.throttling import SimpleRateThrottle

from lib.api.bearer import MALFORMED_AUTHORIZATION, bearer_token
from lib.api.errors import error_json
from lib.client_address import client_address, proxy_networks
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
# The token rate gate: first, when a failures key is given, the client address's count of bad tokens (barred
# at or past its limit, nothing counted); then the fixed window (count, the key expiring with its window), then,
# within it, the sliding log. Its answer: {count, allowed by the log, the log's oldest time, barred}. A Lua
# function, so the fair share's script (`lib.api.fair_share`) runs it first in the same round trip.
RATE_LUA = (
    _SLIDE
    + """
local function rate(gate, log, failures, expiry, limit, score, window, member, failure_limit)
  if failures and tonumber(redis.call('GET', failures) or '0') >= tonumber(failure_limit) then
    return {0, 0, '', 1}
  end
  local count = redis.call('INCR', gate)
  if count == 1 then redis.call('EXPIRE', gate, expiry) end
  if count > tonumber(limit) then return {count, 0, '', 0} end
  local verdict = slide(log, score, tonumber(window), tonumber(limit), member)
  return {count, verdict[1], verdict[2], 0}
end
"""
)
# A Bearer request's checks in one round trip, atomic across workers.
_GATE_THEN_LOG_SCRIPT = unbound_script(
    RATE_LUA + "return rate(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])"
)


# Where the WSGI gate (`lib.api.fair_share.FairShareGate`) leaves the sliding log's verdict of an API call it
# counted (None if Redis failed): the middleware then counts nothing again.
RATE_COUNTED = "archivist.rate_counted"


def throttled_response(wait: int, detail: str = "") -> JsonResponse:
    """A 429 refused before any view runs, in the one error shape, with its Retry-After in seconds."""
    detail = detail or f"Request was throttled. Expected available in {wait} seconds."
    return error_json("throttled", detail, status=429, headers={"Retry-After": str(wait)})


def presented_digest(header: str) -> str:
    """A hash of the token an Authorization header presents: the rate gate's and the log's keys name it."""
    return hashlib.sha256(header[7:].strip().encode()).hexdigest()[:32]


def log_key(header: str) -> str:
    """The cache key of one presented Bearer token's sliding log: the rate gate checks it before
    authentication (`TokenRateGateMiddleware`) and the throttle after, so both keep one log."""
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


def rate_keys_and_args(
    *, gate: str, log: str, rate: tuple[int, int], now: float, failures: tuple[str, int] | None = None
) -> tuple[list[str], list[str | int | float]]:
    """The keys and arguments of the rate gate's Lua function `rate`, in its order: the token's window count
    under `gate`, its sliding log under `log` (full cache keys), and with `failures` (an address's bad-token
    key and its limit) that address's bar."""
    limit, period = rate
    score, member = log_entry(now)
    keys = [gate, log]
    args: list[str | int | float] = [period + 1, limit, score, period, member]
    if failures is not None:
        keys.append(failures[0])
        args.append(failures[1])
    return keys, args


def gate_then_log(
    *, gate: str, log: str, rate: tuple[int, int], now: float, client, failures: tuple[str, int] | None = None
) -> tuple[int, LogVerdict, bool]:
    """A Bearer request counted in its window under `gate` and, if within the rate, checked and added in its
    sliding log under `log`: one script (`rate_keys_and_args`). The window's count, the log's verdict, and
    whether the address is barred."""
    keys, args = rate_keys_and_args(gate=gate, log=log, rate=rate, now=now, failures=failures)
    return rate_answered(_GATE_THEN_LOG_SCRIPT(keys=keys, args=args, client=client), now=now, rate=rate)


def rate_answered(answer, *, now: float, rate: tuple[int, int]) -> tuple[int, LogVerdict, bool]:
    """The Lua function `rate`'s answer read: the window's count, the log's verdict, whether barred."""
    count, allowed, oldest, barred = answer[:4]
    return int(count), LogVerdict.answered(now=now, rate=rate, allowed=allowed, oldest=oldest), bool(barred)


_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@functools.lru_cache(maxsize=16)
def parse_rate(rate: str) -> tuple[int, int]:
    """`"1200/min"` → (1200, 60), the way DRF reads a rate (cached: read on every request)."""
    number, period = rate.split("/")
    return int(number), _PERIODS[period[0]]


def gate_key(header: str, window: int) -> str:
    """The cache key counting one presented token's requests in one window (a hash: guesses count too)."""
    return f"gate:{presented_digest(header)}:{window}"


def failures_key(address: str, window: int) -> str:
    """The cache key counting one client address's unknown or malformed tokens in one window (an address is
    at most 45 characters; a longer forwarded one is cut, never let grow the key)."""
    return f"badtoken:{address[:64]}:{window}"


@functools.lru_cache(maxsize=4)
def trusted_proxies(entries: tuple[str, ...]) -> tuple:
    return proxy_networks(entries)


def address_in(environ) -> str:
    """The client's address in a WSGI environ (a request's META): REMOTE_ADDR, or the forwarded one when the
    peer is a proxy the operator trusts."""
    return client_address(
        peer=environ.get("REMOTE_ADDR", ""),
        forwarded_for=environ.get("HTTP_X_FORWARDED_FOR", ""),
        proxies=trusted_proxies(tuple(settings.TRUSTED_PROXIES)),
    )


def address_of(request) -> str:
    """The client's address of a Django request."""
    return address_in(request.META)


class Gate(NamedTuple):
    """What the rate gate counted for a request: its token's count in the window, the sliding log's verdict
    (None without Redis), and whether its address is barred for presenting bad tokens."""

    in_window: int
    verdict: LogVerdict | None
    barred: bool = False


class RateRefusal(NamedTuple):
    """Why the rate gate refuses a request (the `refused` metric's reason), its Retry-After and the 429's detail."""

    reason: str
    wait: int
    detail: str


def bar_wait(now: float) -> int:
    """The Retry-After of an address barred for bad tokens: until its window ends."""
    return seconds_left(now, parse_rate(settings.BAD_TOKEN_RATE)[1])


def barred_refusal(now: float) -> RateRefusal:
    """An address past its bad-token limit, refused until its window ends."""
    wait = bar_wait(now)
    detail = f"Too many unknown or malformed tokens from your address. Expected available in {wait} seconds."
    return RateRefusal("bad_tokens_from_address", wait, detail)


def gate_refusal(gate: Gate, now: float) -> RateRefusal | None:
    """What the rate gate refuses the request it counted for, if anything: its address is barred, or its
    token is past `MEMORY_API_RATE` in the window (the sliding log's verdict is the throttle's to answer)."""
    if gate.barred:
        return barred_refusal(now)
    limit, period = parse_rate(settings.MEMORY_API_RATE)
    if gate.in_window > limit:
        wait = seconds_left(now, period)
        return RateRefusal("token_rate", wait, f"Request was throttled. Expected available in {wait} seconds.")
    return None


class RateScript(NamedTuple):
    """The rate gate's Lua function `rate` for one request: its keys and arguments (full cache keys) and the
    rate it checks against."""

    keys: list[str]
    args: list[str | int | float]
    rate: tuple[int, int]


def _window_keys(header: str, now: float, address: str | None) -> tuple[tuple[int, int], str, tuple[str, int] | None]:
    rate = parse_rate(settings.MEMORY_API_RATE)
    failures = None
    if address is not None:
        failure_rate = parse_rate(settings.BAD_TOKEN_RATE)
        failures = (failures_key(address, int(now // failure_rate[1])), failure_rate[0])
    return rate, gate_key(header, int(now // rate[1])), failures


def rate_script(header: str, now: float, address: str) -> RateScript:
    """The rate gate's keys and arguments for a request presenting `header` from `address` at `now`."""
    rate, key, failures = _window_keys(header, now, address)
    assert failures is not None
    keys, args = rate_keys_and_args(
        gate=cache.make_key(key),
        log=cache.make_key(log_key(header)),
        rate=rate,
        now=now,
        failures=(cache.make_key(failures[0]), failures[1]),
    )
    return RateScript(keys, args, rate)


def count_in_window(header: str, now: float, address: str | None = None) -> Gate:
    """This request counted in its token's window and, within the rate, in its sliding log: one script in
    Redis, whose verdict the throttle then answers from; with `address`, the same script first checks that
    address is not past its bad-token limit. A cache without scripts: its add, incr and get, no verdict."""
    rate, key, failures = _window_keys(header, now, address)
    client_of = getattr(getattr(cache, "_cache", None), "get_client", None)
    if client_of is None:  # still atomic per command; the throttle keeps the log itself
        if failures is not None and (cache.get(failures[0]) or 0) >= failures[1]:
            return Gate(0, None, barred=True)
        cache.add(key, 0, timeout=rate[1] + 1)
        return Gate(cache.incr(key), None)
    gate = cache.make_key(key)
    count, verdict, barred = gate_then_log(
        gate=gate,
        log=cache.make_key(log_key(header)),
        rate=rate,
        now=now,
        client=client_of(gate, write=True),
        failures=(cache.make_key(failures[0]), failures[1]) if failures is not None else None,
    )
    return Gate(count, verdict, barred)


def failure_counted(address: str, now: float) -> int:
    """One unknown or malformed token from `address` counted in its window: the window's count. Only a refused
    request pays for this, so the cache's own add and incr are enough."""
    period = parse_rate(settings.BAD_TOKEN_RATE)[1]
    key = failures_key(address, int(now // period))
    cache.add(key, 0, timeout=period + 1)
    return cache.incr(key)


def seconds_left(now: float, period: int) -> int:
    """Until the fixed window holding `now` ends, in whole seconds (at least 1): a Retry-After."""
    return max(1, math.ceil((int(now // period) + 1) * period - now))


class TokenRateGateMiddleware:
    """Refuses a flood from one Bearer token, or from one address presenting bad tokens, with 429 for the
    price of one Redis round trip, and leaves the sliding log's verdict for the throttle."""

    # One script counts the token's fixed window of `MEMORY_API_RATE` (a token sends at most twice the rate
    # across a window's edge), checks and adds the request in its exact sliding log, and first reads the
    # address's count of unknown or malformed tokens (`BAD_TOKEN_RATE`): guessing with a new token each time
    # escapes a per-token count. Keyed by a hash of whatever was presented, so guesses count too. An API call
    # whose Authorization is not exactly `Bearer <token>` is refused here with 401. If Redis cannot be
    # reached the request goes on: the gate must not become an outage. Behind the WSGI gate
    # (`lib.api.fair_share.FairShareGate`) an API call was counted, and refused if so, before Django ran:
    # this then only reads its verdict and counts a 401 against the address.

    def __init__(self, get_response):
        self.get_response = get_response
        if not hasattr(getattr(cache, "_cache", None), "get_client"):
            logger.warning("token rate gate: the cache is not Redis; counting with add and incr instead of a script")

    def __call__(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return self.get_response(request)
        if bearer_token(header) is None:
            if not request.path_info.startswith("/api/"):
                return self.get_response(request)  # the pages read no Authorization header
            return self._refused_as_malformed(request)
        now = time.time()
        address = address_of(request)
        if RATE_COUNTED in request.environ:  # counted before Django, where its refusals were answered
            request.log_verdict = request.environ[RATE_COUNTED]
            return self._answered(request, address, now)
        try:
            gate = count_in_window(header, now, address)
        except Exception as error:  # noqa: BLE001 - any cache failure lets the request through
            logger.warning("token rate gate unavailable, letting %s through: %s", request.path, error)
            return self.get_response(request)
        request.log_verdict = gate.verdict
        refusal = gate_refusal(gate, now)
        if refusal is not None:
            return self._refused(refusal)
        return self._answered(request, address, now)

    def _answered(self, request, address: str, now: float):
        response = self.get_response(request)
        if response.status_code == 401:
            self._count_failure(request, address, now)
        return response

    def _refused_as_malformed(self, request):
        now = time.time()
        if self._count_failure(request, address_of(request), now) > parse_rate(settings.BAD_TOKEN_RATE)[0]:
            return self._refused(barred_refusal(now))
        refused("malformed_authorization")
        return error_json(
            "unauthenticated",
            MALFORMED_AUTHORIZATION,
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="archivist"'},
        )

    def _count_failure(self, request, address: str, now: float) -> int:
        try:
            return failure_counted(address, now)
        except Exception as error:  # noqa: BLE001 - any cache failure lets the request through
            logger.warning("bad-token counter unavailable for %s: %s", request.path, error)
            return 0

    def _refused(self, refusal: RateRefusal) -> JsonResponse:
        refused(refusal.reason)
        return throttled_response(refusal.wait, refusal.detail)


class PrincipalRateThrottle(SimpleRateThrottle):
    """Requests per token (an agent) or per signed-in person, at `MEMORY_API_RATE`; past it, 429 with Retry-After.

    Counted in the shared cache, so every web worker counts the same requests; if it cannot be reached the
    request is let through (an outage of the limiter must not become one of the API)."""

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
        log was checked with the rate gate's count, before authentication (`TokenRateGateMiddleware`): its verdict."""
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
