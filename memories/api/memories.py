"""Memories as resources: remember and list, read, forget, correct, pin and unpin."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, status
from rest_framework.response import Response

from accounts.auth import Principal
from lib.api.docs import ERROR_EXAMPLE, PLACE_EXAMPLE, answered, asked, read_schema, write_schema
from lib.api.idempotency import (
    IDEMPOTENCY_PARAMETER,
    idempotency_key_of,
    idempotent_write,
    principal_key,
    request_fingerprint,
)
from memories.api import serializers as s
from memories.api.base import MemoryApi, PagedListApi
from memories.api.docs import FORGOTTEN_EXAMPLE, LIMIT_REACHED, MEMORY_EXAMPLE, REMEMBER_EXAMPLE
from memories.api.filters import MemoryFilter
from memories.models import Memory
from memories.places import PlaceInTurn
from memories.selectors import (
    memories_seen_by_agent,
    memories_visible_to,
    memory_injections,
    memory_supersede_chain,
)
from memories.services import memory_forget, memory_supersede
from memories.turns.writes import RememberRequest, memory_pin, memory_remember_in_place
from memories.writer import Together

AGENT_PLACE_PARAMETER = OpenApiParameter(
    "place",
    str,
    required=False,
    description=(
        "The channel id of the place an agent serves: required for agents (400 without it), who see only what "
        "they could recall there; 404 where the agent may not act. Ignored for people."
    ),
    examples=[OpenApiExample("A DM", value="D024BE7LH")],
)


class MemoryListApi(PagedListApi):
    """`GET` what the caller may see; `POST` remembers a fact said in a place."""

    filterset_class = MemoryFilter
    serializer_class = s.MemoryOutputSerializer
    model = Memory

    def rows(self, principal: Principal):
        if principal.agent is not None:
            rows = memories_seen_by_agent(
                agent=principal.agent, organisation=principal.organisation, place=self.place_to_read().place
            )
        else:
            rows = memories_visible_to(viewer_user=principal.user, organisation=principal.organisation)
        return rows.select_related("agent", "written_by")

    def filter_queryset(self, queryset):
        filterset = MemoryFilter(self.request.query_params, queryset=queryset, request=self.request)
        if not filterset.is_valid():
            raise exceptions.ValidationError(filterset.errors)
        return filterset.qs

    @read_schema(
        operation_id="memories_list",
        parameters=[AGENT_PLACE_PARAMETER],
        responses={200: s.MemoryOutputSerializer(many=True)},
        examples=[answered("A page of memories", [MEMORY_EXAMPLE])],
    )
    def get(self, request):
        """List the memories you may see.

        Every memory the caller may see, newest first, as cursor pages (`next`, `previous`, `results`; `page_size` up
        to 200). An agent names the `place` it serves and sees what it could recall there (its own facts and those
        shared by all agents, whose scope reaches that place); a person sees their own and their organisation's.
        Filters: bucket, scope, subject, author, tier, pinned, created and expiry ranges, `state`
        (live, expired, superseded, erased), `q` for words, `source_ref` or `source_ref_prefix` for an integration's
        own references, and `channel` for a place (its channel facts, and for a DM its person's facts). Erased rows
        show their receipt, never their text.
        """
        self.read_from_standby()
        return self.answer_page(self.filter_queryset(self.get_queryset()))

    @write_schema(
        operation_id="memories_remember",
        request=s.RememberInputSerializer,
        responses={201: s.RememberedOutputSerializer, 409: LIMIT_REACHED},
        examples=[
            asked("Remember in a DM", REMEMBER_EXAMPLE),
            answered(
                "Remembered, narrowed to the person",
                {**MEMORY_EXAMPLE, "scope_reason": ""},
                "201",
            ),
            answered("Refused", ERROR_EXAMPLE, "400"),
        ],
    )
    def post(self, request):
        """Remember a fact said in a place.

        Writes one fact. `place` is where it was said: the narrowest scope the place allows is used (a DM with one
        person keeps it as that person's; a private channel as the channel's; only a public channel may write a
        workspace fact), and `scope_reason` says when the scope used differs from the one asked for; `only_for` keeps
        it for one person. Tiers: `profile` (who someone is; kept 90 days unless given an expiry), `log` (what
        happened; 90 days) and `note` (working notes; 14 days, fading from the block). An agent holds at most 2,000
        live facts (409 `limit_reached`). Embedding follows in the workers.
        """
        principal = self.principal()
        data = self.validated(s.RememberInputSerializer)
        resolved = self.resolve_place(data["place"])
        memory, replayed = remember(
            principal=principal,
            data=data,
            resolved=resolved,
            key=idempotency_key_of(request),
            fingerprinted=request.data,
        )
        headers = {"Idempotent-Replayed": "true"} if replayed else {}
        output = memory_data(memory, serializer=s.RememberedOutputSerializer)
        return Response(output, status=status.HTTP_201_CREATED, headers=headers)


def memory_data(memory, *, serializer=s.MemoryOutputSerializer):
    """A memory as answers show it, as of now."""
    return serializer(memory, context={"now": timezone.now()}).data


def fresh(memory: Memory) -> Memory:
    """The row as it is now, with what its answer names."""
    return Memory.objects.select_related("agent", "written_by").get(pk=memory.pk)


def replay_memory(status_code: int = status.HTTP_200_OK):
    """A retry's answer: the memory the first write returned, as it is now (a receipt once erased)."""

    def replay(memory, extra) -> Response:
        return Response(memory_data(fresh(memory)), status=status_code)

    return replay


def remember(
    *,
    principal: Principal,
    data: dict,
    resolved: PlaceInTurn,
    key: str | None,
    fingerprinted,
    together: Together | None = None,
) -> tuple[s.Annotated, bool]:
    """Remember one validated request once per Idempotency-Key: (the memory `remembered`, whether replayed).

    `fingerprinted` is the request as sent, which a retry under the same key must repeat; `together`, the
    batch it is written in (`memories.writer.remembering_together`)."""

    def write():
        return remember_write(principal=principal, data=data, resolved=resolved, together=together)

    if key is None:
        (memory, extra), replayed = write(), False
    else:
        memory, extra, replayed = idempotent_write(
            organisation=principal.organisation,
            principal=principal_key(principal),
            key=key,
            endpoint="remember",
            fingerprint=request_fingerprint(endpoint="remember", data=fingerprinted),
            write=write,
        )
    if replayed:
        memory = fresh(memory)
    return s.remembered(memory, extra), replayed


def remember_write(
    *, principal: Principal, data: dict, resolved: PlaceInTurn, together: Together | None = None
) -> tuple[Memory, dict]:
    """One validated remember request, written: (the memory, {"scope_reason", "notice"})."""
    memory, choice = memory_remember_in_place(
        RememberRequest.of(data),
        organisation=principal.organisation,
        resolved=resolved,
        writer=principal.writer,
        together=together,
    )
    return memory, {"scope_reason": choice.reason, "notice": resolved.notice}


class MemoryDetailApi(MemoryApi):
    """One memory with its provenance, its versions and its injections; `DELETE` forgets it."""

    @read_schema(
        operation_id="memories_read",
        parameters=[AGENT_PLACE_PARAMETER],
        responses={
            200: s.MemoryDetailOutputSerializer,
            404: OpenApiResponse(description="No memory you can see."),
            410: OpenApiResponse(
                s.MemoryDetailOutputSerializer,
                description="Forgotten: the memory is gone and this is its receipt (who, when, why; no body).",
            ),
        },
        examples=[
            OpenApiExample(
                "A memory",
                value={
                    **MEMORY_EXAMPLE,
                    "chain": [MEMORY_EXAMPLE],
                    "injections": [
                        {
                            "turn_id": "turn-42",
                            "at": "2026-11-30T09:01:00Z",
                            "position": 0,
                            "section": "profile",
                            "erased": False,
                        }
                    ],
                },
            )
        ],
    )
    def get(self, request, memory_id):
        """Read a memory: provenance, supersede chain and injections.

        One memory the caller may see, with its source, every version of its supersede chain (oldest first) and the
        turns it was injected into. An agent names the `place` it serves and reads only what it could recall there. A
        forgotten memory answers 410 with its receipt (who erased it, when, why) in place of its text. Another
        organisation's memory, or one the caller may not see, answers 404.
        """
        sees = self.reader()
        self.read_from_standby()
        memory = self.memory_seen_or_404(memory_id, sees)
        detail = s.Annotated(
            memory,
            chain=[row for row in memory_supersede_chain(memory=memory) if sees(row)],
            injections=memory_injections(memory=memory)[:100],
        )
        data = memory_data(detail, serializer=s.MemoryDetailOutputSerializer)
        # A forgotten memory stays forgotten: 410 Gone, with the receipt in place of the memory.
        return Response(data, status=status.HTTP_410_GONE if memory.redacted_at else status.HTTP_200_OK)

    @write_schema(
        operation_id="memories_forget",
        request=s.ForgetInputSerializer,
        responses={200: s.MemoryOutputSerializer},
        examples=[
            asked("Why", {"reason": "Mona asked me to forget it"}),
            answered("The receipt", FORGOTTEN_EXAMPLE),
        ],
    )
    def delete(self, request, memory_id):
        """Forget a memory (a recorded erasure).

        Erases the memory's text and vector and keeps a receipt (who, when, why); its lines in recorded injections are
        scrubbed. An agent names the `place` of its turn (400 without it) and forgets only what it could recall there.
        Forgetting twice answers the receipt.
        """
        data = self.validated(s.ForgetInputSerializer)

        def write():
            memory, viewer = self.memory_in_place(memory_id, data.get("place"))
            if memory.redacted_at is None:
                self.changeable_or_403(memory, viewer)
                memory = memory_forget(memory=memory, reason=data.get("reason", ""), **self.actor())
            return Response(memory_data(memory)), memory, {}

        return self.idempotent("forget", write, replay_memory())


class MemorySupersedeApi(MemoryApi):
    @write_schema(
        operation_id="memories_correct",
        request=s.SupersedeInputSerializer,
        responses={201: s.MemoryOutputSerializer, 400: OpenApiResponse(description="Already corrected, or bad input.")},
        examples=[
            asked("Correction", {"body": "Prefers to be called Mona again"}),
            answered("The new version", MEMORY_EXAMPLE, "201"),
        ],
    )
    def post(self, request, memory_id):
        """Correct a memory: a new version replaces it.

        Writes a new version with the corrected body; the old one stays in the chain, superseded, and is no longer
        recalled. Tier, pin, expiry and source may be changed with it. An agent names the `place` of its turn (400
        without it) and corrects only what it could recall there.
        """
        data = dict(self.validated(s.SupersedeInputSerializer))
        return self.idempotent(
            "supersede", lambda: self.supersede(memory_id, data), replay_memory(status.HTTP_201_CREATED)
        )

    def supersede(self, memory_id, data: dict):
        memory = self.memory_to_change(memory_id, data.pop("place", None))
        body = data.pop("body")
        overrides = {}
        for name in ("tier", "pinned", "expires_at", "source_kind"):
            if data.get(name) is not None:
                overrides[name] = data[name]
        if data.get("ttl_days") is not None:
            overrides["expires_at"] = timezone.now() + timedelta(days=data["ttl_days"])
        for name, target in (
            ("source_ref", "source_ref"),
            ("source_label", "source_label"),
            ("run_id", "source_run_id"),
        ):
            if data.get(name):
                overrides[target] = data[name]
        replacement = memory_supersede(memory=memory, body=body, overrides=overrides, **self.actor())
        return Response(memory_data(fresh(replacement)), status=status.HTTP_201_CREATED), replacement, {}


class _PinApi(MemoryApi):
    pinned = True

    def post(self, request, memory_id):
        data = self.validated(s.PlaceOnlyInputSerializer)

        def write():
            memory = self.memory_to_change(memory_id, data.get("place"))
            memory = fresh(memory_pin(memory=memory, pinned=self.pinned, **self.actor()))
            return Response(memory_data(memory)), memory, {}

        return self.idempotent("pin" if self.pinned else "unpin", write, replay_memory())


def pin_schema(*, operation_id: str, summary: str, description: str, examples: list):
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation_id,
            summary=summary,
            description=description,
            parameters=[IDEMPOTENCY_PARAMETER],
            request=s.PlaceOnlyInputSerializer,
            responses={200: s.MemoryOutputSerializer},
            examples=examples,
        )
    )


@pin_schema(
    operation_id="memories_pin",
    summary="Pin a memory: recalled and rendered before the others",
    description=(
        "Pinned facts come first in recall and in the rendered block, within the size limits. Only the "
        "current version can be pinned; an agent names the `place` of its turn (400 without it) and pins only what "
        "it could recall there."
    ),
    examples=[
        asked("Pin (an agent names its place)", {"place": PLACE_EXAMPLE}),
        answered("Pinned", {**MEMORY_EXAMPLE, "pinned": True}),
    ],
)
class MemoryPinApi(_PinApi):
    pinned = True


@pin_schema(
    operation_id="memories_unpin",
    summary="Unpin a memory",
    description=(
        "Takes the pin away: the fact is ranked with the others again. An agent names the `place` of its turn "
        "(400 without it) and unpins only what it could recall there."
    ),
    examples=[
        asked("Unpin (an agent names its place)", {"place": PLACE_EXAMPLE}),
        answered("Unpinned", MEMORY_EXAMPLE),
    ],
)
class MemoryUnpinApi(_PinApi):
    pinned = False
