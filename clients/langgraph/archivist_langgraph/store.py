"""`ArchivistStore`: a LangGraph `BaseStore` whose items are Archivist memories, under Archivist's rules."""

# Namespaces map to places, scopes and subjects (anything else is refused with `InvalidNamespaceError`):
#
# | namespace | memories | about |
# | --- | --- | --- |
# | `("memories", CHANNEL)` | said in `CHANNEL`, narrowest scope | a DM's person; elsewhere refused (see below) |
# | `("memories", CHANNEL, SCOPE)` | the same, asking for `workspace`, `channel` or `person` | as above |
# | `("memories", CHANNEL, "person", HANDLE)` | kept for one person of the place (`only_for`) | that person |
# | `("subjects", CHANNEL, TYPE, ID)` | written in the place | the `candidate` or `user` named |
# | `("subjects", CHANNEL, "workspace")` | written in the place | nobody: an operational fact |
#
# The store never chooses whom a fact is about: outside a DM a namespace that does not say (the first two
# rows) is refused by the server, naming `subject_type`. A LangMem tool whose namespace is
# `("memories", "{channel}", "person", "{handle}")` files each memory under that person, so their export and
# erasure find it.
#
# A place's kind and people come from the store's `places` mapping, or the server's directory
# (`GET /api/v1/places`) when it has one; a channel known to neither is refused.
#
# - A value carries its text in `content` (a string, or JSON-encoded when it is a dict or list). It may also
#   carry `tier` (`profile`, `log`, `note`), `pinned`, `occurred_at` and `source_label`; other keys are refused.
# - A key maps to a stable source reference, `lg/<namespace>#<key>`, so `put` of an existing key supersedes
#   the live memory (its history is kept) and `delete` forgets it (a receipt stays). A key that is a memory id
#   (as `search` returns for memories written elsewhere) names that memory.
# - `search` with a query recalls in the place; without one it lists the namespace's live items, newest first.
# - `list_namespaces` lists the namespaces of the items written through a store, and the places.
# - `ttl` (minutes) becomes the memory's expiry; refreshing an expiry on read is refused: an Archivist memory
#   expires when it was told to, however often it is read.

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, unquote

from archivist_client import Archivist, NotFound
from archivist_client.models import Memory
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

SOURCE_REF_PREFIX = "lg/"
SOURCE_REF_MAX_CHARS = 200
SCOPES = ("workspace", "channel", "person")
SUBJECT_TYPES = ("candidate", "user")
VALUE_FIELDS = {"content", "tier", "pinned", "occurred_at", "source_label"}
REFRESH_REFUSED = (
    "Archivist does not extend a memory's expiry when it is read: a memory expires when it was told to. "
    "Call get/search with refresh_ttl=False (the store's default), or put the item again with a new ttl."
)


def source_ref(namespace: tuple[str, ...], key: str) -> str:
    ref = SOURCE_REF_PREFIX + "/".join(quote(label, safe="") for label in namespace) + "#" + quote(key, safe="")
    if len(ref) > SOURCE_REF_MAX_CHARS:
        raise ValueError(
            f"The namespace and key make a source reference of {len(ref)} characters; "
            f"Archivist keeps at most {SOURCE_REF_MAX_CHARS}. Use a shorter key."
        )
    return ref


def parse_source_ref(ref: str) -> tuple[tuple[str, ...], str] | None:
    if not ref.startswith(SOURCE_REF_PREFIX) or "#" not in ref:
        return None
    path, _, key = ref[len(SOURCE_REF_PREFIX) :].partition("#")
    return tuple(unquote(label) for label in path.split("/")), unquote(key)


class Target:
    """What a namespace means: the place, and the scope, person or subject asked for."""

    def __init__(self, namespace: tuple[str, ...], place: dict, **fields: Any):
        self.namespace = namespace
        self.place = place
        self.fields = fields


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class ArchivistStore(BaseStore):
    """A LangGraph store over Archivist's API (sync `batch`, async `abatch`)."""

    supports_ttl = True

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        places: Mapping[str, Mapping[str, Any]] | None = None,
        client: Archivist | None = None,
    ):
        self.client = client or Archivist(base_url, token)
        self.places = {channel: {"channel": channel, **dict(place)} for channel, place in (places or {}).items()}
        self.ttl_config = {"refresh_on_read": False}
        self._directory: dict[str, dict] | None = None

    # --- namespaces ---------------------------------------------------------------------------

    def place_for(self, channel: str) -> dict:
        if channel in self.places:
            return {
                "channel": channel,
                "kind": self.places[channel]["kind"],
                "people": self.places[channel].get("people", []),
            }
        if self._directory is None:
            try:
                self._directory = {
                    row.channel: {"channel": row.channel, "kind": row.kind, "people": row.people}
                    for row in self.client.places()
                }
            except NotFound:
                self._directory = {}  # a server without the places directory
        if channel in self._directory:
            return self._directory[channel]
        raise InvalidNamespaceError(
            f"The namespace names the place {channel!r}, which this store does not know: pass "
            f"places={{{channel!r}: {{'kind': 'dm', 'people': [...]}}}} or record the place in Archivist."
        )

    def target(self, namespace: tuple[str, ...], *, prefix: bool = False) -> Target:
        usage = (
            "Namespaces are ('memories', CHANNEL), ('memories', CHANNEL, SCOPE), "
            "('memories', CHANNEL, 'person', HANDLE), ('subjects', CHANNEL, TYPE, ID) or "
            "('subjects', CHANNEL, 'workspace')."
        )
        if len(namespace) < 2 or namespace[0] not in ("memories", "subjects"):
            raise InvalidNamespaceError(f"{namespace!r} maps to nothing in Archivist. {usage}")
        place = self.place_for(namespace[1])
        if namespace[0] == "memories":
            if len(namespace) == 2:
                return Target(namespace, place)
            scope = namespace[2]
            if scope not in SCOPES or len(namespace) > 4 or (len(namespace) == 4 and scope != "person"):
                raise InvalidNamespaceError(f"{namespace!r} maps to nothing in Archivist. {usage}")
            if len(namespace) == 4:
                return Target(namespace, place, scope="person", only_for=namespace[3])
            return Target(namespace, place, scope=scope)
        if namespace[2:] == ("workspace",):
            return Target(namespace, place, subject_type="workspace")
        if len(namespace) != 4 and not (prefix and len(namespace) >= 2):
            raise InvalidNamespaceError(f"{namespace!r} maps to nothing in Archivist. {usage}")
        if len(namespace) >= 3 and namespace[2] not in SUBJECT_TYPES:
            raise InvalidNamespaceError(f"A subject is a candidate, a user or the workspace, not {namespace[2]!r}.")
        fields = {"subject_type": namespace[2], "subject_id": namespace[3]} if len(namespace) == 4 else {}
        return Target(namespace, place, **fields)

    # --- values -------------------------------------------------------------------------------

    @staticmethod
    def body_of(value: Mapping[str, Any]) -> tuple[str, dict]:
        unknown = sorted(set(value) - VALUE_FIELDS)
        if unknown:
            raise ValueError(
                f"Archivist stores a value's text in 'content' (and tier, pinned, occurred_at, source_label); "
                f"it does not keep {', '.join(unknown)}."
            )
        if "content" not in value:
            raise ValueError("A value needs its text in 'content'.")
        content = value["content"]
        body = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, sort_keys=True)
        extra = {name: value[name] for name in ("tier", "pinned", "occurred_at", "source_label") if name in value}
        return body, extra

    @staticmethod
    def item(memory, namespace: tuple[str, ...], key: str, score: float | None = None, search: bool = False):
        value = {"content": memory.body, "scope": memory.scope, "tier": memory.tier, "id": str(memory.id)}
        created = memory.created_at
        if search:
            return SearchItem(namespace, key, value, created, created, score=score)
        return Item(value=value, key=key, namespace=namespace, created_at=created, updated_at=created)

    def _live(self, target: Target, key: str) -> Memory | None:
        """The live memory a key names, as seen from its namespace's place (an agent reads in a place)."""
        ref = source_ref(target.namespace, key)
        for memory in self.client.list(place=target.place, source_ref=ref, state="live", page_size=10):
            if memory.source.ref == ref:
                return memory
        if _is_uuid(key):
            try:
                memory = self.client.get(key, place=target.place)
            except NotFound:
                return None
            return memory if memory.state == "live" else None
        return None

    # --- operations ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # The same calls, off the event loop: one implementation of the mapping, sync or async.
        return await asyncio.to_thread(self.batch, list(ops))

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"Unknown operation {op!r}")

    def _get(self, op: GetOp) -> Item | None:
        if op.refresh_ttl:
            raise ValueError(REFRESH_REFUSED)
        memory = self._live(self.target(op.namespace), op.key)
        return None if memory is None else self.item(memory, op.namespace, op.key)

    def _put(self, op: PutOp) -> None:
        target = self.target(op.namespace)
        existing = self._live(target, op.key)
        if op.value is None:
            if existing is not None:
                self.client.forget(existing.id, reason="deleted through the LangGraph store", place=target.place)
            return None
        body, extra = self.body_of(op.value)
        expires_at = datetime.now(UTC) + timedelta(minutes=op.ttl) if op.ttl is not None else None
        if existing is not None:
            kept = {name: extra[name] for name in ("tier", "pinned", "source_label") if name in extra}
            # The new version keeps the key's source reference, so the key still names the live version.
            ref = existing.source.ref or source_ref(op.namespace, op.key)
            self.client.correct(
                existing.id, body=body, place=target.place, expires_at=expires_at, source_ref=ref, **kept
            )
            return None
        # Only what the namespace says of whom goes with the write: outside a DM the server refuses the rest.
        self.client.remember(
            body=body,
            place=target.place,
            source_kind="run",
            source_ref=source_ref(op.namespace, op.key),
            expires_at=expires_at,
            **target.fields,
            **extra,
        )
        return None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.refresh_ttl:
            raise ValueError(REFRESH_REFUSED)
        target = self.target(op.namespace_prefix, prefix=True)
        found: list[SearchItem] = []
        if op.query:
            recalled = self.client.recall(question=op.query, place=target.place, limit=min(op.limit + op.offset, 40))
            for row in recalled.results:
                parsed = parse_source_ref(row.source.ref)
                namespace, key = parsed if parsed else (op.namespace_prefix, str(row.id))
                if namespace[: len(op.namespace_prefix)] != op.namespace_prefix:
                    continue
                found.append(self.item(row, namespace, key, score=row.rank.score, search=True))
        else:
            for memory in self.client.list(place=target.place, state="live", page_size=200):
                parsed = parse_source_ref(memory.source.ref)
                if parsed is None or parsed[0][: len(op.namespace_prefix)] != op.namespace_prefix:
                    continue
                found.append(self.item(memory, parsed[0], parsed[1], search=True))
                if len(found) >= op.offset + op.limit and not op.filter:
                    break
        if op.filter:
            found = [item for item in found if all(item.value.get(k) == v for k, v in op.filter.items())]
        return found[op.offset : op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = {("memories", channel) for channel in self.places}
        with contextlib.suppress(NotFound):  # a server without the places directory
            namespaces |= {("memories", row.channel) for row in self.client.places()}
        # An agent lists what it could recall in a place, so the items are found place by place.
        for channel in sorted({namespace[1] for namespace in namespaces}):
            for memory in self.client.list(place=self.place_for(channel), state="live", page_size=200):
                parsed = parse_source_ref(memory.source.ref)
                if parsed is not None:
                    namespaces.add(parsed[0])
        chosen = []
        for namespace in sorted(namespaces):
            if op.match_conditions and not all(_matches(namespace, c) for c in op.match_conditions):
                continue
            chosen.append(namespace[: op.max_depth] if op.max_depth else namespace)
        unique = sorted(set(chosen))
        return unique[op.offset : op.offset + op.limit]


def _matches(namespace: tuple[str, ...], condition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(want == "*" or want == have for want, have in zip(path, part, strict=True))
