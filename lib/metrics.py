"""The Prometheus metrics the code records, defined once (prometheus-client).

Recorded in whichever process does the work; the web's `/metrics` sums them across gunicorn's workers
(`config.observability`). Names follow Prometheus' conventions: a unit suffix, `_total` added to counters.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Histogram

# Seconds, from a cached question (a few milliseconds) to a slow render under load.
LATENCY_BUCKETS = (0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# Reasons: "org_share" (an organisation over its requests in flight), "token_rate" and "person_rate" (a token
# or a signed-in person past its rate), "bad_tokens_from_address" (an address barred for unknown tokens),
# "malformed_authorization", "nul_byte", "chunked_body".
REQUESTS_REFUSED = Counter("archivist_requests_refused", "Requests refused before the view ran", ["reason"])
# Of those, the ones answered late by the tarpit (`lib.api.tarpit`): their client asked again before its last
# refusal's Retry-After ended. By the same reasons; each is counted in REQUESTS_REFUSED too.
REFUSALS_HELD = Counter(
    "archivist_requests_refused_held", "Refusals held until the client's last Retry-After ended", ["reason"]
)

# Reads meant for a standby that the primary answered, by reason (unreachable, behind, failed).
STANDBY_FALLBACKS = Counter("archivist_standby_fallbacks", "Standby reads the primary answered", ["reason"])

REQUEST_SECONDS = Histogram(
    "archivist_request_seconds",
    "Time from a request's arrival to its response, by route, method and status",
    ["endpoint", "method", "status"],
    buckets=LATENCY_BUCKETS,
)

STAGE_SECONDS = Histogram(
    "archivist_stage_seconds",
    "Time spent in each stage of a recall (embedding, statement, ranking) or a render (selection, compose, record)",
    ["operation", "stage"],
    buckets=LATENCY_BUCKETS,
)


def refused(reason: str) -> None:
    """Count one request refused before its view ran, for `reason` (a short fixed word, never caller input)."""
    REQUESTS_REFUSED.labels(reason=reason).inc()


def refusal_held(reason: str) -> None:
    """Count one refusal the tarpit holds, for `reason` (as `refused`)."""
    REFUSALS_HELD.labels(reason=reason).inc()


def observe_stages(operation: str, seconds: dict[str, float]) -> None:
    """Record the time each named stage of `operation` took."""
    for stage, spent in seconds.items():
        STAGE_SECONDS.labels(operation=operation, stage=stage).observe(spent)


@contextmanager
def stage_timer(operation: str, stage: str) -> Iterator[None]:
    """Record the time the block takes as `stage` of `operation` (recorded when it raises, too)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        STAGE_SECONDS.labels(operation=operation, stage=stage).observe(time.perf_counter() - started)
