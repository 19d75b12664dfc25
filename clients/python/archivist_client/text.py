"""Memories as a model may be shown them: the same fence, preamble, line shape and clamp as render's.

What a tool hands a model is memory too, so a client's block is built from the server's own definition
(`archivist_client.rules`, shipped byte for byte): one line per fact, saying whom it is about and where it
came from, line breaks shown as a mark, invisible characters shown as marks such as `[U+200B]` (never
dropped), `& < >` as entities so no body can close the fence, markdown images and links made inert, and the
text clamped as render clamps it. A client's line adds the memory's id (and a state other than live) after
the date, so a model can name the memory it means.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from archivist_client.rules import fenced_block
from archivist_client.rules.fenced_block import FACT_CLAMP, FENCE_CLOSE, FENCE_OPEN, PREAMBLE, escape, fold, inline
from archivist_client.rules.text import neutralise

__all__ = [
    "FACT_CLAMP",
    "FENCE_CLOSE",
    "FENCE_OPEN",
    "PREAMBLE",
    "escape",
    "fact_line",
    "fenced",
    "fold",
    "inline",
    "label",
    "neutralise",
]


def _get(row: Any, name: str, default: Any = "") -> Any:
    if isinstance(row, dict):
        return row.get(name, default)
    return getattr(row, name, default)


def _date(value: Any) -> str:
    """The ISO date of a time (in UTC, as render dates a fact), or of its text."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value[:10]
    if isinstance(value, datetime):
        return (value.astimezone(UTC) if value.tzinfo else value).date().isoformat()
    return str(value or "")[:10]


def _subject(row: Any) -> tuple[str, str]:
    """(type, label) of whom the row is about: recall names it in `subject`; a listed memory by its id."""
    subject = _get(row, "subject", None)
    if subject is not None:
        return _get(subject, "type", "workspace"), _get(subject, "label", "")
    subject_type, subject_id = _get(row, "subject_type", "workspace") or "workspace", _get(row, "subject_id", "")
    if subject_type != "user":
        return subject_type, subject_id
    # A listed memory names a person by account id only: the person whose scope it is is named by the scope's
    # label; anyone else is "a person" rather than an id.
    is_scope_person = _get(row, "scope", "") == "person" and subject_id == _get(row, "scope_ref", None)
    return subject_type, _get(row, "scope_label", "") if is_scope_person else ""


def _labelled(row: Any, *, with_id: bool) -> dict[str, Any]:
    source = _get(row, "source", None) or {}
    subject_type, subject_label = _subject(row)
    rank = _get(row, "rank", None)
    state = _get(row, "state", "live") or "live"
    extra = [f"memory {_get(row, 'id', '')}"] if with_id else []
    if state != "live":
        extra.append(state)
    newer = _get(rank, "newer", None) if rank is not None else None
    if newer:
        # Recall put a newer result on the same matter above it: say so, so the older is read as history.
        extra.append(f"newer on this: memory {newer}" if with_id else "a newer memory on this")
    return {
        "scope": _get(row, "scope", ""),
        "scope_label": _get(row, "scope_label", ""),
        "subject_type": subject_type,
        "subject_label": subject_label,
        "author": _get(row, "author", ""),
        "source": fenced_block.source_words(
            _get(source, "kind", ""), _get(source, "label", ""), _get(source, "ref", "")
        ),
        "dated": _date(_get(row, "occurred_at", None) or _get(row, "created_at", None)),
        "pinned": bool(_get(row, "pinned", False) or (rank is not None and _get(rank, "pinned", False))),
        "extra": extra,
    }


def label(row: Any, *, with_id: bool = True) -> str:
    """`scope · about whom · who · source · date · memory id`, each part escaped, as render labels a line."""
    return fenced_block.label(**_labelled(row, with_id=with_id))


def fact_line(row: Any, *, with_id: bool = True, limit: int = FACT_CLAMP) -> str:
    """`- [label] text`: render's line for the row (with the memory's id unless `with_id` is false)."""
    return fenced_block.fact_line(text=_get(row, "body", ""), limit=limit, **_labelled(row, with_id=with_id))


def fenced(rows: Iterable[Any], *, empty: str = "No memories.") -> str:
    """The rows as one fenced block of labelled lines after render's preamble, or `empty` (outside any fence)."""
    return fenced_block.fenced(fact_line(row) for row in rows) or empty
