"""What a turn injected: the record of one render, and its replay."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.response import Response

from accounts.auth import Principal
from lib.api.docs import answered, read_schema
from memories.api import serializers as s
from memories.api.base import MemoryApi
from memories.api.docs import INJECTION_EXAMPLE, REPLAY_EXAMPLE
from memories.models import Injection
from memories.places import token_allows
from memories.turns.injections import injection_replay


class _InjectionApi(MemoryApi):
    def injection_or_404(self, turn_id: str) -> Injection:
        principal = self.principal()
        injection = (
            Injection.objects.select_related("agent", "user")
            .filter(organisation=principal.organisation, turn_id=turn_id)
            .first()
        )
        if injection is None or not self.may_read(injection, principal):
            raise exceptions.NotFound("No injection you can see has this turn id.")
        return injection

    @staticmethod
    def may_read(injection: Injection, principal: Principal) -> bool:
        # The block held what was recallable in that place, so it is shown to
        # the agent that rendered it and to the people who were in the place.
        if principal.agent is not None:
            return injection.agent_id == principal.agent.pk and token_allows(
                principal.token,
                channel=injection.place_channel,
                kind=injection.place_kind,
                people=injection.place_people or [],
            )
        user = principal.user
        assert user is not None  # a principal is an agent or a person
        return injection.user_id == user.pk or str(user.pk) in (injection.place_people or [])


class InjectionDetailApi(_InjectionApi):
    @read_schema(
        operation_id="injections_read",
        responses={200: s.InjectionOutputSerializer},
        examples=[answered("A record", INJECTION_EXAMPLE)],
    )
    def get(self, request, turn_id):
        """The record of one turn's injection.

        What one turn's block injected: the place, the question, the cutoff, every line with its memory, and what the
        limits left out. Shown to the agent that rendered it and to the people who were in the place.
        """
        return Response(s.InjectionOutputSerializer(self.injection_or_404(turn_id)).data)


class InjectionReplayApi(_InjectionApi):
    @read_schema(
        operation_id="injections_replay",
        request=None,
        responses={200: s.ReplayOutputSerializer},
        examples=[answered("After an erasure", REPLAY_EXAMPLE)],
    )
    def post(self, request, turn_id):
        """Compose a turn's block again from its record.

        Lays the recorded lines out again and compares the hash with the record; facts erased since are named with
        their receipt, never shown. Writes nothing.
        """
        return Response(s.ReplayOutputSerializer(injection_replay(injection=self.injection_or_404(turn_id))).data)
