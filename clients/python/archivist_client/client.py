"""`Archivist` and `AsyncArchivist`: the agent-turn API as keyword-argument methods with typed answers.

Each method is written once (`_Operations`) as a description of its HTTP calls (`_Call`), and what to do
with each answer, when to try again (`_Attempts`) and where the next page starts (`_Pages`) are decided
once too; only sending differs: the sync client sends with `httpx.Client`, the async one with
`httpx.AsyncClient`. Every write carries an `Idempotency-Key` (made here unless given), kept across
retries, so a retried write never writes twice. A 429 or 503 is retried after the `Retry-After` the
server sent, a dropped connection after a short backoff, at most `max_retries` times and never for
longer than `max_retry_wait` seconds at once.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack
from urllib.parse import parse_qs, quote, urlsplit

import httpx
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from archivist_client import models as m
from archivist_client.errors import Unavailable, error_for, retry_after_seconds

DEFAULT_TIMEOUT = 30.0
BATCH_MAX_ITEMS = 100
IDEMPOTENCY_HEADER = "Idempotency-Key"
_RETRY_STATUSES = (429, 503)


def _clean(values: Mapping[str, Any], *drop: str) -> dict[str, Any]:
    """The keyword arguments that were given (not None), as JSON-ready values."""
    return {
        name: to_jsonable_python(value)
        for name, value in values.items()
        if value is not None and name not in drop and name != "self"
    }


def _segment(value: str) -> str:
    return quote(str(value), safe="")


class ProvenanceFields(TypedDict, total=False):
    """How a memory is kept and where it came from: the keywords `remember` and `correct` share."""

    tier: str | None
    pinned: bool | None
    expires_at: Any
    ttl_days: int | None
    source_kind: str | None
    source_ref: str | None
    source_label: str | None
    run_id: str | None


def _provenance(given: Mapping[str, Any]) -> dict[str, Any]:
    """The provenance keywords given, JSON-ready; any other keyword is refused, as Python refuses it."""
    if unknown := sorted(set(given) - ProvenanceFields.__annotations__.keys()):
        raise TypeError(f"got an unexpected keyword argument {unknown[0]!r}")
    return _clean(given)


def _as_place(place: m.Place | Mapping) -> dict:
    if isinstance(place, BaseModel):
        return place.model_dump()
    return m.Place.model_validate(dict(place)).model_dump()


@dataclass
class _Call:
    method: str
    path: str
    json: Any = None
    params: dict[str, Any] | None = None
    model: type[BaseModel] | None = None
    write: bool = False
    idempotency_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def _answer(call: _Call, response: httpx.Response):
    if response.status_code >= 400:
        raise error_for(response)
    if response.status_code == 204 or not response.content:
        return None
    data = response.json()
    return call.model.model_validate(data) if call.model is not None else data


class _Attempts:
    """The tries of one call: the same request, idempotency key included, until an answer is final."""

    def __init__(self, call: _Call, max_retries: int, max_retry_wait: float):
        headers = dict(call.headers)
        if call.write:
            headers[IDEMPOTENCY_HEADER] = call.idempotency_key or str(uuid.uuid4())
        self.request = {
            "method": call.method,
            "url": call.path,
            "json": call.json,
            "params": call.params,
            "headers": headers,
        }
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.tried = 0

    def wait_after(self, response: httpx.Response | None, error: httpx.TransportError | None) -> float | None:
        """Seconds to wait before trying again, or None when `response` is the answer.

        A transport error (`error`, with no response) that may not be tried again is raised as `Unavailable`.
        """
        wait = self._wait(response)
        if wait is None and error is not None:
            raise Unavailable(f"Archivist could not be reached: {error}", status=0, code="unreachable") from error
        self.tried += 1
        return wait

    def _wait(self, response: httpx.Response | None) -> float | None:
        if self.tried >= self.max_retries:
            return None
        if response is not None:
            if response.status_code not in _RETRY_STATUSES:
                return None
            wait = retry_after_seconds(response)
            wait = 0.5 * 2**self.tried if wait is None else wait
        else:
            wait = 0.25 * 2**self.tried
        return wait if wait <= self.max_retry_wait else None


class _Pages:
    """A listing fetched a page a request, each request following the cursor of the page before."""

    def __init__(self, path: str, params: Mapping[str, Any], model: type[BaseModel]):
        self.path = path
        self.params = dict(params)
        self.model = model
        self.done = False

    def next_call(self) -> _Call | None:
        """The request for the next page, or None after the last page."""
        return None if self.done else _Call("GET", self.path, params=self.params)

    def rows(self, page: dict | list) -> Iterator[Any]:
        """The page's rows, typed; the next call then asks for the page after it."""
        if isinstance(page, list):  # an unpaginated list (the places one may use)
            page = {"results": page, "next": None}
        cursor = _cursor(page.get("next"))
        if cursor is None:
            self.done = True
        else:
            self.params = {**self.params, "cursor": cursor}
        return (self.model.model_validate(row) for row in page["results"])


def _cursor(next_url: str | None) -> str | None:
    if not next_url:
        return None
    values = parse_qs(urlsplit(next_url).query).get("cursor")
    return values[0] if values else None


def _merge_batches(batches: list[m.Batch]) -> m.Batch:
    items: list[m.BatchItem] = []
    for batch in batches:
        offset = len(items)
        items.extend(item.model_copy(update={"index": item.index + offset}) for item in batch.items)
    return m.Batch(
        created=sum(b.created for b in batches),
        duplicates=sum(b.duplicates for b in batches),
        refused=sum(b.refused for b in batches),
        items=items,
    )


class _Operations:
    """The API's operations, each describing its calls; each client's `_run`, `_run_all` and `_pages` send them."""

    default_place: dict | None
    _run: Callable[[_Call], Any]
    _run_all: Callable[[list[_Call], Callable[[list[Any]], Any]], Any]
    _pages: Callable[[_Pages], Any]

    def _place(self, place: m.Place | Mapping | None, *, required: bool = False) -> dict | None:
        if place is None:
            place = self.default_place
        if place is None:
            if required:
                raise ValueError("This call needs a place: pass place=... or give the client a default place.")
            return None
        return _as_place(place)

    def _with_place(self, data: dict[str, Any], place: m.Place | Mapping | None) -> dict[str, Any]:
        """`data` and the place, when the call or the client names one."""
        if (resolved := self._place(place)) is not None:
            data["place"] = resolved
        return data

    # --- memories ---------------------------------------------------------------------------

    def remember(
        self,
        *,
        body: str,
        place: m.Place | Mapping | None = None,
        scope: str | None = None,
        only_for: str | None = None,
        subject_type: str | None = None,
        subject_id: str | None = None,
        occurred_at: Any = None,
        idempotency_key: str | None = None,
        **provenance: Unpack[ProvenanceFields],
    ) -> m.Remembered:
        """Remember a fact said in a place; the narrowest scope the place allows is used (`scope_reason` says)."""
        data = _clean(locals(), "idempotency_key", "place", "provenance") | _provenance(provenance)
        data["place"] = self._place(place, required=True)
        return self._run(
            _Call("POST", "memories", data, model=m.Remembered, write=True, idempotency_key=idempotency_key)
        )

    def remember_many(self, items: Iterable[Mapping[str, Any]], *, place: m.Place | Mapping | None = None) -> m.Batch:
        """Remember many facts, 100 per call to `POST /memories/batch`; each item is answered on its own.

        Items are `remember` keyword arguments as dicts; an item without a place takes `place` or the
        client's default. Each item gets its own idempotency key, so a retried batch writes nothing twice.
        """
        prepared = []
        for item in items:
            row = _clean(item)
            row["place"] = self._place(item.get("place") or place, required=True)
            row.setdefault("idempotency_key", str(uuid.uuid4()))
            prepared.append(row)
        chunks = [prepared[start : start + BATCH_MAX_ITEMS] for start in range(0, len(prepared), BATCH_MAX_ITEMS)]
        calls = [_Call("POST", "memories/batch", {"items": chunk}, model=m.Batch, write=True) for chunk in chunks]
        return self._run_all(calls, _merge_batches)

    def _serving(self, place: m.Place | Mapping | None) -> dict[str, str]:
        """The `place` query parameter an agent's read names: the channel of `place`, or of the default place.
        An agent sees only what it could recall in the place it serves."""
        resolved = self._place(place, required=True)
        assert resolved is not None  # required
        return {"place": resolved["channel"]}

    def get(self, memory_id: Any, *, place: m.Place | Mapping | None = None) -> m.MemoryDetail:
        """A memory with its provenance, versions and injections, as seen from the place served (`place` or the
        default); raises `Forgotten` (with the receipt) if erased, `NotFound` if it is not recallable there."""
        path = f"memories/{_segment(memory_id)}"
        return self._run(_Call("GET", path, params=self._serving(place), model=m.MemoryDetail))

    def correct(
        self,
        memory_id: Any,
        *,
        body: str,
        place: m.Place | Mapping | None = None,
        idempotency_key: str | None = None,
        **provenance: Unpack[ProvenanceFields],
    ) -> m.Memory:
        """Correct a memory: a new version supersedes it (the old one stays in the chain)."""
        data = self._with_place({"body": body} | _provenance(provenance), place)
        path = f"memories/{_segment(memory_id)}/supersede"
        return self._run(_Call("POST", path, data, model=m.Memory, write=True, idempotency_key=idempotency_key))

    def pin(self, memory_id: Any, *, place=None, idempotency_key: str | None = None) -> m.Memory:
        """Pin a memory: recalled and rendered before the others."""
        return self._pin(memory_id, "pin", place, idempotency_key)

    def unpin(self, memory_id: Any, *, place=None, idempotency_key: str | None = None) -> m.Memory:
        return self._pin(memory_id, "unpin", place, idempotency_key)

    def _pin(self, memory_id, action, place, idempotency_key):
        data = self._with_place({}, place)
        path = f"memories/{_segment(memory_id)}/{action}"
        return self._run(_Call("POST", path, data, model=m.Memory, write=True, idempotency_key=idempotency_key))

    def forget(self, memory_id: Any, *, reason: str = "", place=None, idempotency_key: str | None = None) -> m.Memory:
        """Forget a memory; the answer is its receipt (who, when, why; no body)."""
        data = self._with_place({"reason": reason}, place)
        path = f"memories/{_segment(memory_id)}"
        return self._run(_Call("DELETE", path, data, model=m.Memory, write=True, idempotency_key=idempotency_key))

    # --- turns ------------------------------------------------------------------------------

    def recall(
        self,
        *,
        question: str = "",
        place: m.Place | Mapping | None = None,
        limit: int | None = None,
        mode: str | None = None,
        occurred_after: Any = None,
        occurred_before: Any = None,
    ) -> m.Recalled:
        """The facts most relevant to a question, among those recallable in the place."""
        data = _clean(locals(), "place")
        data["place"] = self._place(place, required=True)
        return self._run(_Call("POST", "recall", data, model=m.Recalled))

    def render(
        self,
        *,
        turn_id: str,
        question: str = "",
        place: m.Place | Mapping | None = None,
        cutoff: Any = None,
    ) -> m.Rendered:
        """The fenced memory block for one turn; the injection is recorded under `turn_id`."""
        data = _clean(locals(), "place")
        data["place"] = self._place(place, required=True)
        return self._run(_Call("POST", "render", data, model=m.Rendered, write=True))

    def injection(self, turn_id: str) -> m.Injection:
        """The record of what one turn's block injected."""
        return self._run(_Call("GET", f"injections/{_segment(turn_id)}", model=m.Injection))

    def replay(self, turn_id: str) -> m.Replay:
        """Compose a turn's block again from its record (erased facts are named, not shown)."""
        return self._run(_Call("POST", f"injections/{_segment(turn_id)}/replay", {}, model=m.Replay))

    def ingest_events(self, thread_id: str, *, events: Iterable[Mapping[str, Any]]) -> m.Ingested:
        """Post what happened in a thread (at most 100 events); learned memories follow in the background.

        An event without a place takes the client's default place. An event in a place the agent may not
        act in, or naming someone not of the organisation, is refused on its own (`refusals`); when every
        event is refused nothing is stored and `Conflict` (422) lists them in its body's `refusals`.
        """
        rows = []
        for event in events:
            row = _clean(event)
            row["place"] = self._place(event.get("place"), required=True)
            rows.append(row)
        path = f"threads/{_segment(thread_id)}/events"
        return self._run(_Call("POST", path, {"events": rows}, model=m.Ingested, write=True))

    def thread(self, thread_id: str) -> dict:
        """A thread's consolidation state and the memories learned from it."""
        return self._run(_Call("GET", f"threads/{_segment(thread_id)}"))

    # --- subjects and claims ----------------------------------------------------------------

    def subject_export(self, *, subject_type: str, subject_id: str) -> m.SubjectExport:
        """Everything held about a subject, oldest first, receipts included."""
        path = f"subjects/{_segment(subject_type)}/{_segment(subject_id)}/memories"
        return self._run(_Call("GET", path, model=m.SubjectExport))

    def subject_erase(
        self, *, subject_type: str, subject_id: str, reason: str = "", idempotency_key: str | None = None
    ) -> m.SubjectErase:
        """Erase everything held about a subject; one receipt per row stays."""
        path = f"subjects/{_segment(subject_type)}/{_segment(subject_id)}/erase"
        return self._run(
            _Call("POST", path, {"reason": reason}, model=m.SubjectErase, write=True, idempotency_key=idempotency_key)
        )

    def submit_claim(
        self,
        *,
        body: str,
        slug: str,
        entity: str,
        transparency: str,
        as_of: Any,
        evidence_refs: list[dict],
        source_ref: str | None = None,
        source_label: str | None = None,
        idempotency_key: str | None = None,
    ) -> m.Claim:
        """Submit a system claim for stewards to decide."""
        data = _clean(locals(), "idempotency_key")
        return self._run(
            _Call("POST", "system-claims", data, model=m.Claim, write=True, idempotency_key=idempotency_key)
        )

    def claim(self, claim_id: Any) -> m.Claim:
        return self._run(_Call("GET", f"system-claims/{_segment(claim_id)}", model=m.Claim))

    # --- the directory and places -----------------------------------------------------------

    def put_person(self, handle: str, *, display_name: str = "", idempotency_key: str | None = None) -> m.Person:
        """Create or update a directory person by handle (201 created, 200 updated)."""
        path = f"people/{_segment(handle)}"
        data = {"display_name": display_name}
        return self._run(_Call("PUT", path, data, model=m.Person, write=True, idempotency_key=idempotency_key))

    def put_place(
        self, channel: str, *, kind: str, people: Iterable[str] = (), idempotency_key: str | None = None
    ) -> m.PlaceRecord:
        """Create or update a place's record: its kind and its members (handles or usernames)."""
        path = f"places/{_segment(channel)}"
        data = {"kind": kind, "people": list(people)}
        return self._run(_Call("PUT", path, data, model=m.PlaceRecord, write=True, idempotency_key=idempotency_key))

    # --- listings (last: below `def list`, `list` in this class body is the method) ------------

    def people(self, *, page_size: int | None = None) -> Iterator[m.Person]:
        """The organisation's people, following the cursors."""
        return self._pages(_Pages("people", _clean({"page_size": page_size}), m.Person))

    def places(self, *, page_size: int | None = None) -> Iterator[m.PlaceRecord]:
        """The places the caller may use."""
        return self._pages(_Pages("places", _clean({"page_size": page_size}), m.PlaceRecord))

    def list(
        self, *, place: m.Place | Mapping | None = None, page_size: int | None = None, **filters: Any
    ) -> Iterator[m.Memory]:
        """Every memory recallable in the place served (`place` or the default), newest first, as an iterator
        that follows the cursors.

        Filters are the API's (`scope`, `tier`, `state`, `q`, `subject_type`, `subject_id`, `source_ref`, `channel`,
        `created_after`, ...); `page_size` is how many each request fetches (at most 200).
        """
        params = _clean({**filters, "page_size": page_size}) | self._serving(place)
        return self._pages(_Pages("memories", params, m.Memory))


class _Core:
    """What both clients hold: the server, the token, the default place, the limits, and an httpx client."""

    _http_class: type[httpx.Client] | type[httpx.AsyncClient]

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        place: m.Place | Mapping | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 2,
        max_retry_wait: float = 30.0,
        http: httpx.Client | httpx.AsyncClient | None = None,
    ):
        base_url = base_url or os.environ.get("ARCHIVIST_URL")
        token = token or os.environ.get("ARCHIVIST_TOKEN")
        if not base_url:
            raise ValueError("No Archivist URL: pass base_url=... or set ARCHIVIST_URL.")
        if not token:
            raise ValueError("No Archivist token: pass token=... or set ARCHIVIST_TOKEN.")
        self.base_url = base_url.rstrip("/")
        self.api = self.base_url + "/api/v1/"
        self.token = token
        self.default_place = _as_place(place) if place is not None else None
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.http = http or self._http_class(base_url=self.api, headers=self.headers, timeout=timeout)


class Archivist(_Core, _Operations):
    """The synchronous client: `Archivist(base_url, token, place=None)`; both read the environment when not given."""

    _http_class = httpx.Client
    http: httpx.Client

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Archivist:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _run(self, call: _Call):
        attempts = _Attempts(call, self.max_retries, self.max_retry_wait)
        while True:
            try:
                response, error = self.http.request(**attempts.request), None
            except httpx.TransportError as caught:
                response, error = None, caught
            wait = attempts.wait_after(response, error)
            if wait is None:
                return _answer(call, response)
            time.sleep(wait)

    def _run_all(self, calls: list[_Call], combine: Callable[[list[Any]], Any]):
        return combine([self._run(call) for call in calls])

    def _pages(self, pages: _Pages) -> Iterator[Any]:
        while (call := pages.next_call()) is not None:
            yield from pages.rows(self._run(call))


class AsyncArchivist(_Core, _Operations):
    """The asynchronous client: `Archivist`'s methods, awaited; `list`, `people` and `places` are async iterators."""

    _http_class = httpx.AsyncClient
    http: httpx.AsyncClient

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncArchivist:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def _run(self, call: _Call):
        attempts = _Attempts(call, self.max_retries, self.max_retry_wait)
        while True:
            try:
                response, error = await self.http.request(**attempts.request), None
            except httpx.TransportError as caught:
                response, error = None, caught
            wait = attempts.wait_after(response, error)
            if wait is None:
                return _answer(call, response)
            await asyncio.sleep(wait)

    async def _run_all(self, calls: list[_Call], combine: Callable[[list[Any]], Any]):
        return combine([await self._run(call) for call in calls])

    async def _pages(self, pages: _Pages) -> AsyncIterator[Any]:
        while (call := pages.next_call()) is not None:
            for row in pages.rows(await self._run(call)):
                yield row


__all__ = ["Archivist", "AsyncArchivist"]
