"""/metrics: served to this host's own callers or to the token's holder, and the refusal counter moves where
requests are refused. (Figures summed across gunicorn's workers: tests/test_deploying_guide.py.)"""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-for-the-scraper-0123456789"


def names(response) -> set[str]:
    return {family.name for family in text_string_to_metric_families(response.content.decode())}


def test_a_caller_on_this_host_reads_every_figure(client):
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert {
        "archivist_database_up",
        "archivist_redis_up",
        "archivist_queue_depth",
        "archivist_consolidation_lag_seconds",
        "archivist_consolidation_threads_behind",
    } <= names(response)


def test_a_forwarded_or_remote_caller_is_refused_without_the_token(client):
    assert client.get("/metrics", HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 403
    # Positive control: the same client on loopback is served.
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200


def test_with_a_token_only_its_holder_is_served_even_on_this_host(client, settings):
    settings.METRICS_TOKEN = TOKEN
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token").status_code == 403
    served = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", REMOTE_ADDR="203.0.113.9")
    assert served.status_code == 200


def refusals(reason: str) -> float:
    return REGISTRY.get_sample_value("archivist_requests_refused_total", {"reason": reason}) or 0.0


def test_each_refusal_before_a_view_is_counted_by_its_reason(client):
    before = {reason: refusals(reason) for reason in ("nul_byte", "malformed_authorization", "chunked_body")}
    assert client.get("/api/v1/memories", {"q": "a\x00b"}).status_code == 400
    assert client.post("/api/v1/recall", {}, HTTP_AUTHORIZATION="Basic Zm9vOmJhcg==").status_code == 401
    assert client.generic("POST", "/api/v1/recall", b"{}", HTTP_TRANSFER_ENCODING="chunked").status_code == 411
    assert {reason: refusals(reason) - count for reason, count in before.items()} == {
        "nul_byte": 1,
        "malformed_authorization": 1,
        "chunked_body": 1,
    }
    # A request that is not refused counts nothing.
    client.get("/healthz")
    assert refusals("nul_byte") == before["nul_byte"] + 1


def requests_counted(endpoint: str, method: str, status: str) -> float:
    labels = {"endpoint": endpoint, "method": method, "status": status}
    return REGISTRY.get_sample_value("archivist_request_seconds_count", labels) or 0.0


def test_each_request_is_timed_by_its_route_pattern_never_its_path(client):
    refused = requests_counted("api/v1/recall", "POST", "401")
    unknown = requests_counted("unmatched", "GET", "404")
    invented = requests_counted("api/v1/recall", "other", "401")
    client.post("/api/v1/recall", {}, HTTP_AUTHORIZATION="Basic Zm9vOmJhcg==")
    client.get("/no/such/page/42")
    assert client.generic("BREW", "/api/v1/recall").status_code == 401
    # A request refused before its view is named by the route it was for; a path no route takes is one series.
    assert requests_counted("api/v1/recall", "POST", "401") == refused + 1
    assert requests_counted("unmatched", "GET", "404") == unknown + 1
    # A method nobody serves is one series too, not one per name a caller invents.
    assert requests_counted("api/v1/recall", "other", "401") == invented + 1
