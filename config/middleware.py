"""Middleware: response headers every page carries, requests refused before any view runs, and the web-only
middleware a Bearer API call passes by. The token rate gate is `lib.api.rate_gate`."""

import time
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.middleware.csrf import CsrfViewMiddleware

from lib.api.bearer import bearer_token
from lib.api.errors import error_json
from lib.metrics import refused


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
            return error_json("invalid", message, {where: [message]}, status=400)
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
        return error_json("length_required", message, {"Transfer-Encoding": [message]}, status=411)


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
