"""Middleware: response headers every page carries, and requests refused before any view runs."""

import functools
import logging
import math
import time
from typing import Any, NamedTuple

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.cache import cache
from django.http import JsonResponse
from django.middleware.csrf import CsrfViewMiddleware

from lib.api.bearer import MALFORMED_AUTHORIZATION, bearer_token
from lib.api.throttles import LogVerdict, gate_then_log, log_key, presented_digest, throttled_response
from lib.client_address import client_address, proxy_networks
from lib.metrics import refused

logger = logging.getLogger(__name__)


class ContentSecurityPolicyMiddleware:
    """Sets the Content-Security-Policy header, so a body that slips escaping still cannot run script."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response


class ServerTimingMiddleware:
    """Adds the application's own time to `Server-Timing` (`app;dur=<ms>`), beside what a view reports.

    Outermost, so it spans every middleware, the view and the rendering: what a
    caller's time minus it leaves is the HTTP exchange (the server's socket and
    the client's), which the benchmarks report apart from the per-request work.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        app = f"app;dur={(time.perf_counter() - started) * 1000:.2f}"
        timing = response.get("Server-Timing")
        response["Server-Timing"] = f"{timing}, {app}" if timing else app
        return response


class RefuseNulBytesMiddleware:
    """A NUL byte in the path or the query string is refused with a 400 before any view runs.

    PostgreSQL cannot store or even compare text holding NUL, so a lookup on
    such an id would fail in the database (a 500) instead of answering "no such row".
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        where = None
        if "\x00" in request.path:
            where = "path"
        elif any("\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists()):
            where = "query"
        if where is not None:
            refused("nul_byte")
            message = f"The {where} contains a NUL byte; ids and parameters are text without control characters."
            return JsonResponse({"error": "invalid", "detail": message, "fields": {where: [message]}}, status=400)
        return self.get_response(request)


class RefuseChunkedBodiesMiddleware:
    """A body sent with `Transfer-Encoding` (chunked) is refused with 411 before any view runs.

    Django reads a body by its Content-Length; without one it reads nothing, so
    a chunked body would reach a view as an empty one ("body: This field is
    required") instead of as what was sent. Every client this API serves sends
    a length; 411 Length Required tells the one that did not what to send.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "HTTP_TRANSFER_ENCODING" not in request.META:
            return self.get_response(request)
        refused("chunked_body")
        message = "A body sent in chunks (Transfer-Encoding) is not read; send it with a Content-Length."
        fields = {"Transfer-Encoding": [message]}
        return JsonResponse({"error": "length_required", "detail": message, "fields": fields}, status=411)


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


def address_of(request) -> str:
    """The client's address: REMOTE_ADDR, or the forwarded one when the peer is a proxy the operator trusts."""
    return client_address(
        peer=request.META.get("REMOTE_ADDR", ""),
        forwarded_for=request.META.get("HTTP_X_FORWARDED_FOR", ""),
        proxies=trusted_proxies(tuple(settings.TRUSTED_PROXIES)),
    )


class Gate(NamedTuple):
    """What the rate gate counted for a request: its token's count in the window, the sliding log's verdict
    (None without Redis), and whether its address is barred for presenting bad tokens."""

    in_window: int
    verdict: LogVerdict | None
    barred: bool = False


def count_in_window(header: str, now: float, address: str | None = None) -> Gate:
    """This request counted in its token's window and, within the rate, in its sliding log: one script in
    Redis, whose verdict the throttle then answers from; with `address`, the same script first checks that
    address is not past its bad-token limit. A cache without scripts: its add, incr and get, no verdict."""
    rate = parse_rate(settings.MEMORY_API_RATE)
    key = gate_key(header, int(now // rate[1]))
    failures = None
    if address is not None:
        failure_rate = parse_rate(settings.BAD_TOKEN_RATE)
        failures = (failures_key(address, int(now // failure_rate[1])), failure_rate[0])
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
    """Counts each presented Bearer token's requests, and each address's bad tokens, in Redis before the
    database is touched.

    A flood from one token is refused here (429 with Retry-After) for the price
    of one Redis round trip, instead of a transaction, a token lookup and the
    DRF throttle's own check: the other tenants' requests keep the workers. The
    count is per fixed window of `MEMORY_API_RATE` (a token sends at most twice
    the rate across a window's edge). The same script checks and adds the
    request in the token's exact sliding log (`lib.api.throttles`) and leaves
    its verdict on the request: the DRF throttle answers a Bearer call from it
    after authentication, with no round trip of its own, and checks signed-in
    people itself. Keyed by a hash of whatever was presented, so guessed tokens
    are counted as well.

    Guessing with a new token each time escapes a per-token count, so the same
    script also reads the client address's count of unknown or malformed
    tokens (`BAD_TOKEN_RATE`, per fixed window): past it, that address's Bearer
    calls are answered 429 with no database work. An API call whose
    Authorization header is not exactly `Bearer <token>` is refused here with
    401 (`lib.api.bearer`) and counted. If Redis cannot be reached the request
    goes on: the gate must not become an outage.
    """

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
        try:
            gate = count_in_window(header, now, address)
        except Exception as error:  # noqa: BLE001 - any cache failure lets the request through
            logger.warning("token rate gate unavailable, letting %s through: %s", request.path, error)
            return self.get_response(request)
        request.log_verdict = gate.verdict
        if gate.barred:
            return self._barred(now)
        limit, period = parse_rate(settings.MEMORY_API_RATE)
        if gate.in_window > limit:
            refused("token_rate")
            return throttled_response(seconds_left(now, period))
        response = self.get_response(request)
        if response.status_code == 401:
            self._count_failure(request, address, now)
        return response

    def _refused_as_malformed(self, request):
        now = time.time()
        if self._count_failure(request, address_of(request), now) > parse_rate(settings.BAD_TOKEN_RATE)[0]:
            return self._barred(now)
        refused("malformed_authorization")
        response = JsonResponse(
            {"error": "unauthenticated", "detail": MALFORMED_AUTHORIZATION, "fields": {}}, status=401
        )
        response["WWW-Authenticate"] = 'Bearer realm="archivist"'
        return response

    def _count_failure(self, request, address: str, now: float) -> int:
        try:
            return failure_counted(address, now)
        except Exception as error:  # noqa: BLE001 - any cache failure lets the request through
            logger.warning("bad-token counter unavailable for %s: %s", request.path, error)
            return 0

    def _barred(self, now: float) -> JsonResponse:
        refused("bad_tokens_from_address")
        wait = seconds_left(now, parse_rate(settings.BAD_TOKEN_RATE)[1])
        return throttled_response(
            wait, f"Too many unknown or malformed tokens from your address. Expected available in {wait} seconds."
        )


def bearer_api_request(request) -> bool:
    """An API call carrying a Bearer token: it authenticates by the token, never by a session cookie."""
    return (
        request.path_info.startswith("/api/") and bearer_token(request.META.get("HTTP_AUTHORIZATION", "")) is not None
    )


class WebOnly:
    """Mixed into a middleware the web pages need but a Bearer API call does not: such a call passes by it.

    A Bearer call is authenticated by its token or refused (DRF tries the session
    only when no token is presented), its views are CSRF-exempt, and it reads no
    messages: the session, the user from it, CSRF and messages would be work for
    nothing. Every other request, pages and session API calls alike, runs them.
    """

    get_response: Any

    def __call__(self, request):
        if bearer_api_request(request):
            return self.get_response(request)
        return super().__call__(request)  # the middleware this is mixed into


class WebSessionMiddleware(WebOnly, SessionMiddleware):
    pass


class WebCsrfViewMiddleware(WebOnly, CsrfViewMiddleware):
    pass


class WebAuthenticationMiddleware(WebOnly, AuthenticationMiddleware):
    pass


class WebMessageMiddleware(WebOnly, MessageMiddleware):
    pass
