"""Middleware: response headers every page carries, and requests refused before any view runs."""

import functools
import logging
import math
import time
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.cache import cache
from django.http import JsonResponse
from django.middleware.csrf import CsrfViewMiddleware

from lib.api.throttles import LogVerdict, gate_then_log, log_key, presented_digest

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
            message = f"The {where} contains a NUL byte; ids and parameters are text without control characters."
            return JsonResponse({"error": "invalid", "detail": message, "fields": {where: [message]}}, status=400)
        return self.get_response(request)


_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@functools.lru_cache(maxsize=16)
def parse_rate(rate: str) -> tuple[int, int]:
    """`"1200/min"` → (1200, 60), the way DRF reads a rate (cached: read on every request)."""
    number, period = rate.split("/")
    return int(number), _PERIODS[period[0]]


def gate_key(header: str, window: int) -> str:
    """The cache key counting one presented token's requests in one window (a hash: guesses count too)."""
    return f"gate:{presented_digest(header)}:{window}"


def count_in_window(header: str, now: float) -> tuple[int, LogVerdict | None]:
    """This request counted in its token's window and, within the rate, in its sliding log: one script in
    Redis, whose verdict the throttle then answers from. A cache without scripts: its add and incr, no verdict."""
    rate = parse_rate(settings.MEMORY_API_RATE)
    key = gate_key(header, int(now // rate[1]))
    client_of = getattr(getattr(cache, "_cache", None), "get_client", None)
    if client_of is None:  # still atomic per command; the throttle keeps the log itself
        cache.add(key, 0, timeout=rate[1] + 1)
        return cache.incr(key), None
    gate = cache.make_key(key)
    return gate_then_log(
        gate=gate, log=cache.make_key(log_key(header)), rate=rate, now=now, client=client_of(gate, write=True)
    )


class TokenRateGateMiddleware:
    """Counts each presented Bearer token's requests in Redis before the database is touched.

    A flood from one token is refused here (429 with Retry-After) for the price
    of one Redis round trip, instead of a transaction, a token lookup and the
    DRF throttle's own check: the other tenants' requests keep the workers. The
    count is per fixed window of `MEMORY_API_RATE` (a token sends at most twice
    the rate across a window's edge). The same script checks and adds the
    request in the token's exact sliding log (`lib.api.throttles`) and leaves
    its verdict on the request: the DRF throttle answers a Bearer call from it
    after authentication, with no round trip of its own, and checks signed-in
    people itself. Keyed by a hash of whatever was presented, so guessed tokens
    are counted as well. If Redis cannot be reached the request goes on: the
    gate must not become an outage.
    """

    def __init__(self, get_response):
        self.get_response = get_response
        if not hasattr(getattr(cache, "_cache", None), "get_client"):
            logger.warning("token rate gate: the cache is not Redis; counting with add and incr instead of a script")

    def __call__(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header[:7].lower() != "bearer ":
            return self.get_response(request)
        limit, period = parse_rate(settings.MEMORY_API_RATE)
        now = time.time()
        try:
            count, request.log_verdict = count_in_window(header, now)
        except Exception as error:  # noqa: BLE001 - any cache failure lets the request through
            logger.warning("token rate gate unavailable, letting %s through: %s", request.path, error)
            return self.get_response(request)
        if count <= limit:
            return self.get_response(request)
        wait = max(1, math.ceil((int(now // period) + 1) * period - now))
        detail = f"Request was throttled. Expected available in {wait} seconds."
        response = JsonResponse({"error": "throttled", "detail": detail, "fields": {}}, status=429)
        response["Retry-After"] = str(wait)
        return response


def bearer_api_request(request) -> bool:
    """An API call carrying a Bearer token: it authenticates by the token, never by a session cookie."""
    return request.path_info.startswith("/api/") and request.META.get("HTTP_AUTHORIZATION", "")[:7].lower() == "bearer "


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
