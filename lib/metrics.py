"""The service's counters, for Prometheus to read.

Counted where the event happens; exposing them is the deployment's concern.
"""

from prometheus_client import Counter

# Reasons: "org_share" (an organisation over its requests in flight), "token_rate" and "person_rate" (a token
# or a signed-in person past its rate), "bad_token" (an address barred for unknown tokens), "malformed_token"
# (an Authorization header that is not `Bearer <token>`).
REQUESTS_REFUSED = Counter("archivist_requests_refused", "Requests refused before the view ran", ["reason"])
