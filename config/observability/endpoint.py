"""/metrics: Prometheus' text format, summed across gunicorn's workers, for loopback callers or a token holder.

Without `ARCHIVIST_METRICS_TOKEN` only a caller on the same host is served, and only when no proxy forwarded
the request (a proxy on the same host would otherwise make every caller look local). With the token set,
a scraper anywhere presents it as `Authorization: Bearer <token>`, and nothing else is served.
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

from config.observability import multiprocess
from config.observability.live import LiveCollector

FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


def allowed(request: HttpRequest) -> bool:
    """Whether this caller may read the metrics (the module's docstring says who)."""
    token = settings.METRICS_TOKEN
    if token:
        presented = request.META.get("HTTP_AUTHORIZATION", "")
        return hmac.compare_digest(presented.encode(), f"Bearer {token}".encode())
    if any(header in request.META for header in FORWARDING_HEADERS):
        return False
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


def scrape_registry() -> CollectorRegistry:
    """Every worker's figures (or this process's alone, outside gunicorn), and the live ones."""
    if multiprocess.files_in_use():
        from prometheus_client import multiprocess as summed

        registry = CollectorRegistry()
        summed.MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(REGISTRY)  # a registry collects like a collector
    registry.register(LiveCollector())
    return registry


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        return HttpResponse(
            "Metrics are served to this host's own callers or with ARCHIVIST_METRICS_TOKEN (docs/deploying.md).\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    return HttpResponse(generate_latest(scrape_registry()), content_type=CONTENT_TYPE_LATEST)
