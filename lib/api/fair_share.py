"""The fair share: how many requests one organisation may have in flight at once, checked before the view runs.

Archivist is one server many organisations share. A token within its rate can
still take every web worker (a closed-loop client with as many connections as
there are workers), and the other tenants then wait behind it. The gate counts
each organisation's API requests in flight in Redis and refuses one past
`ORGANISATION_IN_FLIGHT` at once with 429 and `Retry-After: 1` while the server
has no slot to spare beyond one kept for another tenant (`WEB_SLOTS`: a tenant
alone may use all but one), for the price of one Redis round trip and no
database work. The refused request gives its
worker back at once, so the next connection waiting (another tenant's) is
served before the tenant over its share gets another turn.

The organisation is known before the view runs from a short-lived cache of the
presented token's hash to its organisation, written after a request that token
authenticated (`request.auth`, the token DRF found). Until it is known (a
token's first requests, and every unknown token) a token counts against a
share of its own. Revoking a token (`token_revoke`) deletes its entry when the
revocation commits; an entry otherwise lives `FAIR_SHARE_CACHE_SECONDS` at most
(and never past the token's expiry). The cache decides only which share a
request counts against: the token itself is checked in the database on every
request, so a revoked token is refused at once either way.

If Redis cannot be reached the request goes on: the gate must not become an outage.
"""

from __future__ import annotations

import logging
import time
import uuid

from django.conf import settings
from django.core.cache import cache

from lib.api.bearer import bearer_token
from lib.api.rate_gate import presented_digest, throttled_response
from lib.metrics import refused
from lib.scripts import unbound_script

logger = logging.getLogger(__name__)

# A request still counted after this long is taken to have died with its worker (gunicorn's own timeout is
# 30 s), so a killed worker never holds a share for good.
STALE_SECONDS = 120
IN_FLIGHT_PREFIX = "fairshare:inflight:"

# Admit a request to its organisation's share, or to its token's own while the organisation is not known: drop
# entries left by dead workers; at the share, admit only while the server keeps a slot free for another tenant
# (so a tenant alone is not held to its share); else refuse. The bucket's name comes from the organisation read
# here, so the check is one round trip (keys not in KEYS: one Redis, never a cluster).
_ADMIT_SCRIPT = unbound_script(
    """
local organisation = redis.call('GET', KEYS[1])
local bucket = ARGV[1] .. (organisation and ('org:' .. organisation) or ('token:' .. ARGV[2]))
local everyone = ARGV[1] .. 'all'
local oldest = tonumber(ARGV[3]) - tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', bucket, '-inf', oldest)
redis.call('ZREMRANGEBYSCORE', everyone, '-inf', oldest)
local known = organisation and 1 or 0
if redis.call('ZCARD', bucket) >= tonumber(ARGV[5])
   and redis.call('ZCARD', everyone) >= tonumber(ARGV[7]) - 1 then
  return {0, bucket, known}
end
redis.call('ZADD', bucket, ARGV[3], ARGV[6])
redis.call('ZADD', everyone, ARGV[3], ARGV[6])
redis.call('EXPIRE', bucket, ARGV[4])
redis.call('EXPIRE', everyone, ARGV[4])
return {1, bucket, known}
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


class FairShareMiddleware:
    """Refuses an organisation's API request past its share of requests in flight (429, Retry-After: 1)."""

    def __init__(self, get_response):
        self.get_response = get_response
        if _redis_client() is None:
            logger.warning("fair share: the cache is not Redis; requests in flight are not counted")

    def __call__(self, request):
        share = settings.ORGANISATION_IN_FLIGHT
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not share or not request.path_info.startswith("/api/") or bearer_token(header) is None:
            return self.get_response(request)
        digest, member = presented_digest(header), uuid.uuid4().hex
        try:
            client = _redis_client()
            if client is None:
                return self.get_response(request)
            admitted, bucket, known = _ADMIT_SCRIPT(
                keys=[cache.make_key(organisation_key(digest))],
                args=[
                    cache.make_key(IN_FLIGHT_PREFIX),
                    digest,
                    repr(time.time()),
                    STALE_SECONDS,
                    share,
                    member,
                    settings.WEB_SLOTS,
                ],  # fmt: skip
                client=client,
            )
        except Exception as error:  # noqa: BLE001 - any cache failure lets the request through
            logger.warning("fair share unavailable, letting %s through: %s", request.path, error)
            return self.get_response(request)
        if not admitted:
            refused("org_share")
            return throttled_response(
                1, "Your organisation has as many requests in flight as its share of this server; retry in 1 second."
            )
        try:
            return self.get_response(request)
        finally:
            self._release(client, bucket, member, digest, None if known else getattr(request, "auth", None))

    def _release(self, client, bucket, member: str, digest: str, token) -> None:
        """The request leaves its share; a token that authenticated and was not known has its organisation
        remembered, for `FAIR_SHARE_CACHE_SECONDS` and never past its expiry."""
        try:
            pipeline = client.pipeline(transaction=False)
            pipeline.zrem(bucket, member)
            pipeline.zrem(all_in_flight_key(), member)
            organisation_id = getattr(token, "organisation_id", None)
            expires_at = getattr(token, "expires_at", None)
            if organisation_id is not None and expires_at is not None:
                lifetime = min(settings.FAIR_SHARE_CACHE_SECONDS, int(expires_at.timestamp() - time.time()))
                if lifetime > 0:
                    pipeline.set(cache.make_key(organisation_key(digest)), str(organisation_id), ex=lifetime)
            pipeline.execute()
        except Exception as error:  # noqa: BLE001 - the entry then leaves after STALE_SECONDS
            logger.warning("fair share: could not release a request: %s", error)
