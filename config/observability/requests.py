"""Every request's time by route, method and status, for /metrics (`archivist_request_seconds`)."""

from __future__ import annotations

import time

from django.urls import Resolver404, resolve

from lib.metrics import REQUEST_SECONDS

UNMATCHED = "unmatched"
# Any other method a caller invents is one series, not one each.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def endpoint_of(request) -> str:
    """The route pattern that served the request (never the path: ids would make a series per row).

    A request refused before URL resolution (a middleware's 429) is named by the route it was for."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return UNMATCHED
    return match.route or UNMATCHED


class RequestMetricsMiddleware:
    """Outermost, so the time spans every other middleware and the refusals they answer."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        REQUEST_SECONDS.labels(
            endpoint=endpoint_of(request),
            method=request.method if request.method in METHODS else "other",
            status=str(response.status_code),
        ).observe(time.perf_counter() - started)
        return response
