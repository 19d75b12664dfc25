"""The base of the memory endpoints: the caller's place, viewer and memory, and who may change it."""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable
from functools import partial

from django.db import connection, models
from django.utils import timezone
from rest_framework import exceptions, serializers
from rest_framework.generics import GenericAPIView
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response

from accounts.auth import Principal
from lib.api.idempotency import idempotent_response
from lib.api.views import ApiView
from lib.hot_path import ReadWithToken, body_read_ahead
from memories.api.serializers import AGENT_CHANGES_IN_A_PLACE
from memories.db.predicates import times_in_range_q
from memories.models import Bucket, Memory
from memories.places import (
    PLACE_OF_TENANT_STATEMENT,
    PlaceInTurn,
    PlaceRead,
    channel_problem,
    place_for_turn,
    place_to_read,
    record_from_row,
)
from memories.scopes import Viewer, agent_sees, changeable_by, visible_to
from memories.selectors import (
    readable_only,
    viewer_for,
)

logger = logging.getLogger(__name__)


AGENT_READS_NAME_A_PLACE = (
    "An agent names the place it serves (?place=<channel id>); it sees what it could recall there."
)


def channel_in_body(request) -> str | None:
    """The channel a JSON body's `place` names, read ahead of the parser (`lib.hot_path`); None unless it plainly
    names a valid one."""
    data = body_read_ahead(request)
    place = data.get("place") if data is not None else None
    channel = place.get("channel") if isinstance(place, dict) else None
    # Printable: no lone surrogate, which the database could not even be sent (the serializer refuses it).
    usable = isinstance(channel, str) and channel.isprintable() and not channel_problem(channel)
    return channel if usable else None


class MemoryApi(ApiView):
    """The memory endpoints: the place a call names, the viewer it makes, the memory it may see."""

    place_read: PlaceRead | None = None  # the body's place, read with the token on the hot path

    def read_with_token(self, request) -> ReadWithToken | None:
        """The place the body names, read in the token's round trip (`accounts.auth`) for its tenant."""
        channel = channel_in_body(request)
        if channel is None:
            return None

        def take(row) -> None:
            self.place_read = PlaceRead(channel, record_from_row(row, connection) if row is not None else None)

        return ReadWithToken(sql=PLACE_OF_TENANT_STATEMENT, params=(channel,), take=take)

    def resolve_place(self, data: dict | None) -> PlaceInTurn | None:
        """The place the call names, from its record; 404 where the caller may not act."""
        if not data:
            return None
        principal = self.principal()
        return place_for_turn(
            organisation=principal.organisation,
            channel=data["channel"],
            kind=data["kind"],
            people=list(data.get("people") or []),
            user=principal.user,
            agent=principal.agent,
            token=principal.token,
            read=self.place_read,
        )

    def viewer(self, resolved: PlaceInTurn | None = None) -> Viewer:
        principal = self.principal()
        if principal.agent is not None:
            return Viewer(agent_id=str(principal.agent.pk), place=resolved.place if resolved else None)
        return viewer_for(user=principal.user, organisation=principal.organisation, role=principal.role)

    def place_to_read(self) -> PlaceInTurn:
        """The place an agent's read names (`?place=<channel id>`, its record): 400 naming `place` without
        it, 404 where its token may not act."""
        channel = self.request.query_params.get("place")
        if not channel:
            raise exceptions.ValidationError({"place": [AGENT_READS_NAME_A_PLACE]})
        principal = self.principal()
        return place_to_read(organisation=principal.organisation, channel=channel, token=principal.token)

    def reader(self) -> Callable[[Memory], bool]:
        """Whether the caller may read a row outside a turn: an agent, what it could have recalled in the place it
        names (`place_to_read`); a person, what their view shows."""
        principal = self.principal()
        if principal.agent is None:
            return partial(visible_to, viewer=self.viewer())
        return self.agent_recalls_in(self.place_to_read())

    def agent_recalls_in(self, resolved: PlaceInTurn) -> Callable[[Memory], bool]:
        """Whether the calling agent could have recalled a row in this place (seeing follows recall)."""
        agent = self.principal().agent
        assert agent is not None  # only an agent's reads and writes ask
        return partial(agent_sees, agent_id=str(agent.pk), place=resolved.place)

    def memory_seen_or_404(self, memory_id, sees: Callable[[Memory], bool]) -> Memory:
        rows = (
            Memory.objects.select_related("agent", "written_by")
            .filter(organisation=self.principal().organisation, pk=memory_id)
            .exclude(bucket=Bucket.SYSTEM)
        )
        memory = rows.filter(times_in_range_q()).first()
        if memory is None:
            readable_only(rows, read="get")  # names the row when it is there but cannot be read
        if memory is None or not sees(memory):
            raise exceptions.NotFound("No memory you can see has this id.")
        return memory

    def changeable_or_403(self, memory: Memory, viewer: Viewer) -> None:
        if not changeable_by(memory, viewer):
            raise exceptions.PermissionDenied(
                "You may see this memory but not change it: workspace facts are changed by owners, "
                "and an agent changes only facts it holds or that are recallable in the place it names."
            )

    def memory_in_place(self, memory_id, place: dict | None) -> tuple[Memory, Viewer]:
        """The memory a write names, with the viewer the caller is in the place it names. An agent names the place
        of its turn (400 naming `place` without it) and reaches only a row it could recall there, as its reads
        do (`agent_recalls_in`); a person, what their view shows."""
        agent = self.principal().agent is not None
        if agent and not place:
            raise exceptions.ValidationError({"place": [AGENT_CHANGES_IN_A_PLACE]})
        resolved = self.resolve_place(place)
        viewer = self.viewer(resolved)
        if agent:
            assert resolved is not None  # an agent's place is required above
            sees = self.agent_recalls_in(resolved)
        else:
            sees = partial(visible_to, viewer=viewer)
        return self.memory_seen_or_404(memory_id, sees), viewer

    def memory_to_change(self, memory_id, place: dict | None) -> Memory:
        """The memory, seen and changeable by the caller in the place it names (`memory_in_place`)."""
        memory, viewer = self.memory_in_place(memory_id, place)
        self.changeable_or_403(memory, viewer)
        return memory

    def actor(self) -> dict:
        principal = self.principal()
        return {"actor": principal.user, "agent": principal.agent}

    def idempotent(self, endpoint: str, write, replay) -> Response:
        return idempotent_response(self.request, self.principal(), endpoint, write, replay)


class MemoryCursorPagination(CursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request):
        # DRF falls back to the default on a page_size that is not a number; it is refused instead.
        raw = request.query_params.get(self.page_size_query_param)
        if raw is not None and not (raw.isascii() and raw.isdigit() and int(raw) >= 1):
            raise exceptions.ValidationError(
                {
                    self.page_size_query_param: [
                        f"page_size is a whole number from 1 (at most {self.max_page_size} are sent)."
                    ]
                }
            )
        return super().get_page_size(request)


class PagedListApi(MemoryApi, GenericAPIView, abc.ABC):
    """A `GET` answered in cursor pages of `serializer_class`, from `rows(principal)`."""

    serializer_class: type[serializers.BaseSerializer]

    pagination_class = MemoryCursorPagination
    model: type[models.Model]  # whose empty queryset stands in while the schema is generated

    @abc.abstractmethod
    def rows(self, principal: Principal) -> models.QuerySet:
        """The rows this principal may list, before filters and paging."""

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no principal
            return self.model.objects.none()
        return self.rows(self.principal())

    def answer_page(self, rows) -> Response:
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(self.serializer_class(page, many=True, context={"now": timezone.now()}).data)
