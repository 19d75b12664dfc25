"""memories.recall.contextual: which facts count as parts of one source for the spread rule."""

from __future__ import annotations

import pytest

from memories.models import SourceKind
from memories.recall import contextual


def row(source_kind: str, source_ref: str) -> dict:
    return {
        "body": "mona: a part of a long message",
        "source_kind": source_kind,
        "source_ref": source_ref,
        "happened": 1_760_000_000.0,
        "similarity": 0.5,
        "lexemes": None,
        "length": 7,
        "ts_rank": 0.0,
        "subject_type": "",
        "subject_id": "",
    }


def test_an_episode_is_a_part_of_its_events_message():
    assert contextual._candidate("e1", row(SourceKind.EPISODE, "msg-7")).source == "msg-7"


@pytest.mark.parametrize("kind", [k for k in SourceKind.values if k != SourceKind.EPISODE])
def test_other_facts_sharing_a_reference_are_each_their_own(kind):
    # Several facts remembered from one conversation name it alike; none gives way to another for that.
    assert contextual._candidate("f1", row(kind, "conversation-12")).source == ""
