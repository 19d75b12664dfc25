"""Examples the schema shows for the memory endpoints (requests, answers and records), and their refusals."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse

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
FORGOTTEN_EXAMPLE = {
    **MEMORY_EXAMPLE,
    "state": "erased",
    "body": "",
    "receipt": {
        "erased_at": "2026-11-30T10:00:00Z",
        "erased_by": "agent:helper",
        "reason": "Mona asked me to forget it",
    },
}
SUBJECT_EXPORT_EXAMPLE = {
    "subject_type": "candidate",
    "subject_id": "cand-881",
    "exported_at": "2026-11-30T11:00:00Z",
    "count": 1,
    "memories": [{**MEMORY_EXAMPLE, "subject_type": "candidate", "subject_id": "cand-881"}],
    "thread_events": [],
}
SUBJECT_ERASE_EXAMPLE = {
    "subject_type": "candidate",
    "subject_id": "cand-881",
    "erased": 3,
    "already_erased": 1,
    "injection_lines_scrubbed": 2,
    "stores": {
        "memories": 4,
        "vectors": 3,
        "injection_lines": 2,
        "thread_events": 0,
        "derived_memories": 0,
        "learning_keys": 0,
        "injection_questions": 1,
        "provenance": 4,
        "names": 0,
    },
    "receipts": [
        {
            "id": MEMORY_EXAMPLE["id"],
            "erased_at": "2026-11-30T11:00:00Z",
            "erased_by": "user:olive",
            "reason": "Subject access request #77",
        }
    ],
}
INJECTION_EXAMPLE = {
    "turn_id": "turn-42",
    "agent": "helper",
    "user": None,
    "place": PLACE_EXAMPLE,
    "question": "What should I call her?",
    "cutoff": "2026-11-30",
    "created_at": "2026-11-30T09:01:00Z",
    "fact_ids": [MEMORY_EXAMPLE["id"]],
    "lines": [
        {
            "position": 0,
            "id": MEMORY_EXAMPLE["id"],
            "block": "person",
            "section": "profile",
            "scope": "person",
            "author": "model",
            "tier": "profile",
            "line": "- [person mona · …] Prefers to be called Mo",
            "erased_at": None,
        }
    ],
    "omissions": [],
    "faded": [],
    "duplicates": [],
    "sections": [],
    "sha256": "9f2c…",
    "render_version": 1,
}
REPLAY_EXAMPLE = {
    "turn_id": "turn-42",
    "text": "",
    "sha256": "e3b0…",
    "recorded_sha256": "9f2c…",
    "identical": False,
    "unavailable": [
        {
            "id": MEMORY_EXAMPLE["id"],
            "position": 0,
            "scope": "person",
            "reason": "erased on 2026-11-30 by user:mona: asked to forget",
            "erased_at": "2026-11-30T10:00:00Z",
        }
    ],
    "render_version_matches": True,
}

# The live-fact caps (MEMORY_MAX_LIVE_FACTS_PER_AGENT and _PER_PERSON, 2,000 by default) refuse a remember.
LIMIT_REACHED = OpenApiResponse(
    description="`limit_reached`: the writing agent or person holds the most live facts allowed (2,000 by "
    "default); forget, or let some expire, before remembering."
)
