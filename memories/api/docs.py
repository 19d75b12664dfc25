"""Examples the schema shows for the memory endpoints."""

from __future__ import annotations

from lib.api.docs import PLACE_EXAMPLE

REMEMBER_EXAMPLE = {
    "body": "Prefers to be called Mo",
    "place": PLACE_EXAMPLE,
    "tier": "profile",
    "source_kind": "message",
    "source_ref": "msg-1717",
    "source_label": "DM with mona",
}
MEMORY_EXAMPLE = {
    "id": "5f0c8a52-1e8e-4a7a-9f3c-3a1f1b0f9d21",
    "state": "live",
    "body": "Prefers to be called Mo",
    "bucket": "learned",
    "scope": "person",
    "scope_ref": "7d2f5c9e-0b3c-4c1a-a1a2-2f3b4c5d6e7f",
    "scope_label": "mona",
    "subject_type": "user",
    "subject_id": "7d2f5c9e-0b3c-4c1a-a1a2-2f3b4c5d6e7f",
    "author": "model",
    "written": "inferred by an agent",
    "agent": "helper",
    "written_by": None,
    "source": {"kind": "message", "ref": "msg-1717", "label": "DM with mona", "run_id": ""},
    "tier": "profile",
    "pinned": False,
    "embedded": False,
    "created_at": "2026-11-30T09:00:00Z",
    "occurred_at": None,
    "expires_at": "2027-02-28T09:00:00Z",
    "superseded_by": None,
    "receipt": None,
}
