"""Importing a mem0 export (`Memory.get_all` of mem0 2.x): each person's memories into that person's scope."""

# A mem0 memory is `{"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id", "agent_id",
# "run_id"}`, in `{"results": [...]}` or a bare list, as one document (pretty-printed or not) or one memory per
# line. The rules, because a mem0 user is exactly who runs this first and mem0 keeps personal facts:
#
# - `user_id` names a person by handle (or username): a person of the organisation, or else a directory
#   person created for that handle (and reported). Their memories are person facts of their DM, never a
#   shared place's, about them.
# - A row with no `user_id` needs a place named by the operator (`--place`); a place others share (not a DM)
#   takes it only with `--shared`, which is refused for every row that has a `user_id`, so no person's memory
#   reaches a channel by a flag meant for the rest.
# - `agent_id` and `run_id` are kept as provenance (the source label and the run id); `id` is the source
#   reference (`mem0:ID`); the fact is dated when mem0 last wrote it (`updated_at`, else `created_at`).
# - Refusals name the file's line, as the other formats do, then everything goes through `memories_import`.

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from accounts.models import Agent, Organisation
from accounts.people import handle_problem, person_lookup
from lib.fields import json_type_name
from memories.transfer import (
    ImportReport,
    MalformedFile,
    RowRefused,
    dm_of,
    memories_import,
    parse_json_text,
    read_lines,
)

MEM0_SOURCE_LABEL = "mem0 import"


def _skip(text: str, pos: int, chars: str = " \t\r\n") -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _array_start(text: str, document: object) -> int | None:
    """Where the memories' array opens in the text: the document itself, or its `results` (or `memories`)."""
    pos = _skip(text, 0)
    if isinstance(document, list):
        return pos
    decoder = json.JSONDecoder()
    wanted = "results" if "results" in document else "memories"  # type: ignore[operator]
    pos = _skip(text, pos + 1)  # past "{"
    while pos < len(text) and text[pos] != "}":
        key, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, _skip(text, pos) + 1)  # past ":"
        if key == wanted:
            return pos
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, _skip(text, pos), " \t\r\n,")
    return None


def _item_lines(text: str, document: object, count: int) -> list[int]:
    """The line each memory of the array starts on (a pretty-printed export spans many lines per memory)."""
    start = _array_start(text, document)
    if start is None:
        return list(range(1, count + 1))
    decoder = json.JSONDecoder()
    lines: list[int] = []
    pos = _skip(text, start + 1)
    while pos < len(text) and text[pos] != "]" and len(lines) < count:
        lines.append(text.count("\n", 0, pos) + 1)
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, pos, " \t\r\n,")
    return lines + list(range(len(lines) + 1, count + 1))


def mem0_rows(text: str) -> Iterator[tuple[int, dict | RowRefused]]:
    """(line, memory or why it is none) for mem0's `get_all` output: a document or one memory per line."""
    try:
        document = parse_json_text(text)
    except RowRefused:
        yield from read_lines(text.splitlines())
        return
    items = document.get("results", document.get("memories")) if isinstance(document, dict) else document
    if isinstance(document, dict) and items is None:
        yield 1, document
        return
    if not isinstance(items, list):
        raise MalformedFile(
            f'A mem0 export is a list of memories or {{"results": [...]}}; results here is {json_type_name(items)}.'
        )
    for line, item in zip(_item_lines(text, document, len(items)), items, strict=True):
        yield line, item if isinstance(item, dict) else RowRefused("a mem0 memory must be an object")


def _text(item: dict, name: str) -> str:
    value = item.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RowRefused(f"{name} is a string in a mem0 export, not {json_type_name(value)}", field=name)
    return value.strip()


def _person_place(organisation: Organisation, user_id: str) -> dict:
    """The DM a mem0 user's memories land in: that of the person the handle names, else of a new directory person."""
    person = person_lookup(organisation=organisation, name=user_id)
    if person is not None:
        return dm_of(organisation, str(person.user_id), user_id)
    problem = handle_problem(user_id)
    if problem:
        raise RowRefused(f"names nobody here, and cannot be a new person's handle: {problem}", field="user_id")
    return {"channel": f"dm:{user_id}", "kind": "dm", "people": [user_id]}


def from_mem0(item: dict, *, organisation: Organisation, place: dict | None, shared: bool) -> dict:
    """A mem0 memory as a remember request (see the module's docstring for where it lands)."""
    user_id, agent_id, run_id = _text(item, "user_id"), _text(item, "agent_id"), _text(item, "run_id")
    if user_id and shared:
        raise RowRefused(
            f"{user_id!r} names a person, whose memories stay theirs: --shared puts only rows without a "
            "user_id in a shared place",
            field="user_id",
        )
    if user_id:
        where = _person_place(organisation, user_id)
    elif place is None:
        raise RowRefused("names no user_id: pass --place CHANNEL:KIND (and --shared) for such rows", field="user_id")
    elif place["kind"] != "dm" and not shared:
        raise RowRefused(
            f"names no user_id: {place['channel']} is shared by its people, so pass --shared to import it there",
            field="user_id",
        )
    else:
        where = place
    memory_id = item.get("id")
    return {
        "body": item.get("memory") or item.get("text") or "",
        "place": where,
        "created_at": item.get("created_at"),
        "occurred_at": item.get("updated_at") or item.get("created_at"),
        "source_ref": f"mem0:{memory_id}"[:200] if isinstance(memory_id, str | int) and memory_id else "",
        "source_label": f"{MEM0_SOURCE_LABEL}, agent {agent_id}"[:200] if agent_id else MEM0_SOURCE_LABEL,
        "run_id": run_id,
        # A person's memory is about them (their DM's record says so); a shared row is the place's own fact.
        **({} if user_id or where["kind"] == "dm" else {"subject_type": "workspace"}),
    }


def mem0_import(
    *,
    organisation: Organisation,
    agent: Agent,
    text: str,
    place: dict | None = None,
    shared: bool = False,
    partial: bool = False,
    progress: Callable[[], object] | None = None,
) -> ImportReport:
    """Import a mem0 export written by `agent`: all or nothing unless `partial`, like every import."""
    rows: list[tuple[int, dict | RowRefused]] = []
    for line, item in mem0_rows(text):
        try:
            if isinstance(item, RowRefused):
                raise item
            rows.append((line, from_mem0(item, organisation=organisation, place=place, shared=shared)))
        except RowRefused as refusal:
            rows.append((line, refusal))
    # The import makes a directory person of each handle that names nobody yet, inside its transaction.
    return memories_import(
        organisation=organisation,
        agent=agent,
        rows=rows,
        format="jsonl",
        partial=partial,
        progress=progress,
    )
