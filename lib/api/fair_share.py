"""The fair share: how many requests one organisation may have in flight at once, checked before Django runs
with the token rate gate's count, in one Redis script."""

# Archivist is one server many organisations share. A token within its rate can
# still take every web worker (a closed-loop client with as many connections as
# there are workers), and the other tenants then wait behind it. The gate counts
# each organisation's API requests in flight in Redis and refuses one past
# `ORGANISATION_IN_FLIGHT` with 429 and `Retry-After: 1`. A tenant may go past
# its share only while it is alone: no other tenant had a request admitted in
# the last `ACTIVE_SECONDS`, and the server keeps one slot free (`WEB_SLOTS`, all
# but one). A waiting tenant is so served before a tenant over its share.
#
# The gate wraps the WSGI application (`FairShareGate`, `config/wsgi.py`): a
# refusal is one Redis round trip and a few bytes written, with no Django request
# cycle, no middleware and no database. Sync workers take connections in the
# order they came, so a quiet tenant's request waits behind every flood
# connection queued before it: the cheaper each refusal, the shorter that wait.
#
# The organisation is known before the view runs from a short-lived cache of the
# presented token's hash to its organisation, written after a request that token
# authenticated (`request.auth`, the token DRF found, handed back to the gate by
# `FairShareMiddleware`). Until it is known (a token's first requests, and every
# unknown token) a token counts against a share of its own. Revoking a token
# (`token_revoke`) deletes its entry when the revocation commits; an entry
# otherwise lives `FAIR_SHARE_CACHE_SECONDS` at most (and never past the token's
# expiry). The cache decides only which share a request counts against: the
# token itself is checked in the database on every request, so a revoked token
# is refused at once either way.
#
# The same script first runs the token rate gate (`lib.api.rate_gate`): the address's bad-token bar, the
# token's window and its sliding log. Every API call with a Bearer token so counts against its token's rate,
# a refused one too: a flood refused for its share still spends its rate, and a flood past its rate or of
# barred guesses is refused here too, each refusal as cheap. The log's verdict goes on in the environ
# (`RATE_COUNTED`) for the throttle; the middleware then counts nothing again.
#
# A client refused again before its last refusal's Retry-After ended (the same token; for the bad-token bar,
# the same address) is ignoring it: the same script says so (`lib.api.repeat_refusals`), and under gunicorn
# its refusal is handed to the tarpit (`lib.api.tarpit`), answered when that Retry-After ends (at most
# `REFUSAL_HOLD_MS` later) by a thread, holding no worker. A closed loop that ignores the server so sends one
# request per connection per hold, not thousands of refusals a second that take the workers and the cores.
#
# If Redis cannot be reached the request goes on: the gate must not become an outage.

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache

from lib.api.bearer import bearer_token
from lib.api.errors import error_body
from lib.api.rate_gate import (
    RATE_COUNTED,
    RATE_LUA,
    Gate,
    LogVerdict,
    RateRefusal,
    address_in,
    bar_wait,
    gate_refusal,
    presented_digest,
    rate_answered,
    rate_script,
    seconds_left,
)
from lib.api.repeat_refusals import HELD_LUA, hold_args, mark_keys
from lib.api.tarpit import ConnectionTaken, tarpit
from lib.metrics import refusal_held, refused
from lib.scripts import unbound_script

logger = logging.getLogger(__name__)

# A request still counted after this long is taken to have died with its worker (gunicorn's own timeout is
# 30 s), so a killed worker never holds a share for good.
STALE_SECONDS = 120
# An organisation whose request was admitted this recently is active: while one is, no other goes past its
# share. Longer than a paced client's pause between calls (its next request may be queued, not yet counted).
# A token not yet known makes nobody active: a flood of guessed tokens must not hold real tenants to their share.
ACTIVE_SECONDS = 2
IN_FLIGHT_PREFIX = "fairshare:inflight:"
# Where the gate leaves its admission in the WSGI environ, for FairShareMiddleware to name the token.
ADMISSION = "archivist.fair_share"
SHARE_RETRY_AFTER = 1
REFUSAL_DETAIL = "Your organisation has as many requests in flight as its share of this server; retry in 1 second."

# First the token's rate (`rate_gate.RATE_LUA`: the address's bad-token bar, the token's window and sliding log),
# so every request counts against its token's rate, a refused one too. Then, unless the rate gate refuses or no
# share is set, admit the request to its organisation's share, or to its token's own while the organisation is
# not known: drop entries left by dead workers; at the share, admit only while no other tenant is active and
# the server keeps a slot free for another (so a tenant alone is not held to its share); else refuse. The
# bucket's name comes from the organisation read here, so the check is one round trip (keys not in KEYS: one
# Redis, never a cluster). The answer: the rate's four values, then admitted (1 or 0), the bucket ('' when
# not counted), whether the organisation was known, and how long to hold a refusal (ms, `held`: its client
# asked again before the Retry-After of its last refusal ended). KEYS[5] and KEYS[6] are the token's and the
# address's marks, ARGV[15] to ARGV[19] `repeat_refusals.hold_args`.
_ADMIT_SCRIPT = unbound_script(
    RATE_LUA
    + HELD_LUA
    + """
local checked = rate(KEYS[2], KEYS[3], KEYS[4], ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13], ARGV[14])
local now_ms, cap = tonumber(ARGV[15]), tonumber(ARGV[16])
local function answer(allowed, bucket, known, hold)
  return {checked[1], checked[2], checked[3], checked[4], allowed, bucket, known, hold}
end
if checked[4] == 1 then return answer(1, '', 0, held(KEYS[6], now_ms, tonumber(ARGV[19]), cap)) end
if checked[1] > tonumber(ARGV[10]) then return answer(1, '', 0, held(KEYS[5], now_ms, tonumber(ARGV[18]), cap)) end
if tonumber(ARGV[5]) == 0 then return answer(1, '', 0, 0) end
local organisation = redis.call('GET', KEYS[1])
local bucket = ARGV[1] .. (organisation and ('org:' .. organisation) or ('token:' .. ARGV[2]))
local everyone = ARGV[1] .. 'all'
local active = ARGV[1] .. 'active'
local now = tonumber(ARGV[3])
local oldest = now - tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', bucket, '-inf', oldest)
redis.call('ZREMRANGEBYSCORE', everyone, '-inf', oldest)
redis.call('ZREMRANGEBYSCORE', active, '-inf', now - tonumber(ARGV[8]))
local known = organisation and 1 or 0
if redis.call('ZCARD', bucket) >= tonumber(ARGV[5]) then
  local others = redis.call('ZCARD', active) - (redis.call('ZSCORE', active, bucket) and 1 or 0)
  if others > 0 or redis.call('ZCARD', everyone) >= tonumber(ARGV[7]) - 1 then
    return answer(0, bucket, known, held(KEYS[5], now_ms, tonumber(ARGV[17]), cap))
  end
end
redis.call('ZADD', bucket, now, ARGV[6])
redis.call('ZADD', everyone, now, ARGV[6])
if organisation then redis.call('ZADD', active, now, bucket) end
redis.call('EXPIRE', bucket, ARGV[4])
redis.call('EXPIRE', everyone, ARGV[4])
redis.call('EXPIRE', active, ARGV[4])
return answer(1, bucket, known, 0)
"""
)


def organisation_key(digest: str) -> str:
    """The cache key holding the organisation of the token whose hash starts with `digest`."""
    return f"fairshare:org:{digest}"


def in_flight_key(organisation_id) -> str:
    """The full Redis key of an organisation's requests in flight (a sorted set scored by their start)."""
    return cache.make_key(f"{IN_FLIGHT_PREFIX}org:{organisation_id}")


def all_in_flight_key() -> str:
    """The full Redis key of every organisation's requests in flight."""
    return cache.make_key(f"{IN_FLIGHT_PREFIX}all")


def active_key() -> str:
    """The full Redis key of the organisations with a request admitted lately (their buckets, scored by time)."""
    return cache.make_key(f"{IN_FLIGHT_PREFIX}active")


def organisation_forget(token_hash: str) -> None:
    """Forget which organisation a token belongs to (a stored token hash): called when it is revoked. If Redis
    cannot be reached the entry leaves by itself within `FAIR_SHARE_CACHE_SECONDS`."""
    try:
        cache.delete(organisation_key(token_hash[:32]))  # the presented digest is the hash's first 32 characters
    except Exception as error:  # noqa: BLE001 - the revocation has committed; the entry expires
        logger.warning("fair share: could not forget a revoked token's organisation: %s", error)


def _redis_client():
    client_of = getattr(getattr(cache, "_cache", None), "get_client", None)
    return client_of(write=True) if client_of is not None else None


@dataclass
class Admission:
    """A request counted in its share: released when answered; `token` is set once the view authenticated it."""

    client: Any
    bucket: str
    member: str
    digest: str
    known: bool
    token: Any = None

    def release(self) -> None:
        """The request leaves its share; a token that authenticated and was not known has its organisation
        remembered, for `FAIR_SHARE_CACHE_SECONDS` and never past its expiry."""
        try:
            pipeline = self.client.pipeline(transaction=False)
            pipeline.zrem(self.bucket, self.member)
            pipeline.zrem(all_in_flight_key(), self.member)
            organisation_id = getattr(self.token, "organisation_id", None)
            expires_at = getattr(self.token, "expires_at", None)
            if not self.known and organisation_id is not None and expires_at is not None:
                lifetime = min(settings.FAIR_SHARE_CACHE_SECONDS, int(expires_at.timestamp() - time.time()))
                if lifetime > 0:
                    pipeline.set(cache.make_key(organisation_key(self.digest)), str(organisation_id), ex=lifetime)
            pipeline.execute()
        except Exception as error:  # noqa: BLE001 - the entry then leaves after STALE_SECONDS
            logger.warning("fair share: could not release a request: %s", error)


@dataclass
class Checked:
    """What the gate's one script said of an API call: the sliding log's verdict for the throttle (None if Redis
    failed), why it is refused if it is, and its admission to its share when counted in one."""

    verdict: LogVerdict | None
    refusal: RateRefusal | None = None
    admission: Admission | None = None
    hold_ms: int = 0  # a refusal's client asked before its last Retry-After ended: answer it this much later


def checked(environ: dict) -> Checked | None:
    """An API call with a Bearer token counted against its token's rate and, within it, in its share: one
    script. None when not counted here (not such a call, or the cache is not Redis: the rate gate's middleware
    counts it); a verdict of None when Redis failed (the request goes on)."""
    header = environ.get("HTTP_AUTHORIZATION", "")
    if not environ.get("PATH_INFO", "").startswith("/api/") or bearer_token(header) is None:
        return None
    client = _redis_client()
    if client is None:
        return None
    digest, member, now, address = presented_digest(header), uuid.uuid4().hex, time.time(), address_in(environ)
    try:
        rate = rate_script(header, now, address)
        answer = _ADMIT_SCRIPT(
            keys=[cache.make_key(organisation_key(digest)), *rate.keys, *mark_keys(digest, address)],
            args=[
                cache.make_key(IN_FLIGHT_PREFIX),
                digest,
                repr(now),
                STALE_SECONDS,
                settings.ORGANISATION_IN_FLIGHT or 0,
                member,
                settings.WEB_SLOTS,
                ACTIVE_SECONDS,
                *rate.args,
                *_hold_args(now, rate.rate),
            ],  # fmt: skip
            client=client,
        )
    except Exception as error:  # noqa: BLE001 - any cache failure lets the request through
        logger.warning("fair share unavailable, letting %s through: %s", environ.get("PATH_INFO"), error)
        return Checked(verdict=None)
    return _read(answer, now=now, rate=rate.rate, client=client, member=member, digest=digest)


def _hold_args(now: float, rate: tuple[int, int]) -> list[int]:
    """Each refusal's Retry-After as the rate gate will answer it (`gate_refusal`), for the marks."""
    return hold_args(now, share=SHARE_RETRY_AFTER, rate=seconds_left(now, rate[1]), bar=bar_wait(now))


def _read(answer, *, now: float, rate: tuple[int, int], client, member: str, digest: str) -> Checked:
    """The script's answer: the rate gate's refusal first, then the share's, else the admission if counted."""
    count, verdict, barred = rate_answered(answer, now=now, rate=rate)
    refusal = gate_refusal(Gate(count, verdict, barred), now)
    allowed, bucket, known, hold_ms = answer[4:]
    bucket = bucket.decode() if isinstance(bucket, bytes) else bucket
    if refusal is None and not allowed:
        refusal = RateRefusal("org_share", SHARE_RETRY_AFTER, REFUSAL_DETAIL)
    if refusal is not None or not bucket:
        return Checked(verdict=verdict, refusal=refusal, hold_ms=int(hold_ms) if refusal is not None else 0)
    return Checked(
        verdict, admission=Admission(client=client, bucket=bucket, member=member, digest=digest, known=bool(known))
    )


def _refusal_answer(refusal: RateRefusal) -> tuple[list[tuple[str, str]], bytes]:
    body = json.dumps(error_body("throttled", refusal.detail)).encode()
    headers = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
        ("Retry-After", str(refusal.wait)),
        ("X-Content-Type-Options", "nosniff"),
    ]
    return headers, body


REFUSED = "429 Too Many Requests"


def _held(environ: dict, refusal: RateRefusal, hold_ms: int, headers: list[tuple[str, str]], body: bytes) -> bool:
    """A refusal whose client ignored its last Retry-After handed to the tarpit, to be answered `hold_ms`
    later; False when it cannot be held (no gunicorn socket, or as many held as this process may)."""
    answer = (REFUSED, headers, body)
    if not tarpit.hold(environ, answer, seconds=hold_ms / 1000, most=settings.REFUSALS_HELD_PER_WORKER):
        return False
    refusal_held(refusal.reason)
    return True


class FairShareGate:
    """Wraps the WSGI application: refuses an API request past its token's rate, from an address barred for bad
    tokens, or past its organisation's share (429, Retry-After: 1) before Django sees it, in the API's one
    error shape."""

    def __init__(self, application):
        self.application = application
        if _redis_client() is None:
            logger.warning("fair share: the cache is not Redis; requests in flight are not counted")

    def __call__(self, environ, start_response):
        checked_here = checked(environ)
        if checked_here is None:
            return self.application(environ, start_response)
        environ[RATE_COUNTED] = checked_here.verdict
        if checked_here.refusal is not None:
            refused(checked_here.refusal.reason)
            headers, body = _refusal_answer(checked_here.refusal)
            if checked_here.hold_ms and _held(environ, checked_here.refusal, checked_here.hold_ms, headers, body):
                raise ConnectionTaken()  # the tarpit answers it; the worker writes nothing
            start_response(REFUSED, headers)
            return [body]
        admission = checked_here.admission
        if admission is None:
            return self.application(environ, start_response)
        environ[ADMISSION] = admission
        try:
            # Django has built the whole response (the API streams none) when it returns: the work is done.
            return self.application(environ, start_response)
        finally:
            admission.release()


class FairShareMiddleware:
    """Hands the token the view authenticated back to the gate's admission, so the gate learns its organisation."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        admission = request.environ.get(ADMISSION)
        if admission is not None and not admission.known:
            admission.token = getattr(request, "auth", None)
        return response
