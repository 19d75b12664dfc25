"""What the schema shows of every API: the error example and a place."""

from __future__ import annotations

ERROR_EXAMPLE = {
    "error": "invalid",
    "detail": "limit: limit is at most 40.",
    "fields": {"limit": ["limit is at most 40."]},
}
PLACE_EXAMPLE = {"channel": "C024BE91L", "kind": "dm", "people": ["mona"]}
PLACE_MEANS = (
    "`place` is where the turn happens (the channel's id in your chat system, its kind and the people in it): "
    "it decides which scopes may be recalled and written there."
)
