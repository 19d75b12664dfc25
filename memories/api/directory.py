"""The directory: the people of an organisation and its places, as records changed only by explicit writes.

Agents whose token holds the directory right, and owners, create and update
people and places here. Turn calls only read these records.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from accounts.auth import Principal
from accounts.models import Membership
from accounts.people import handle_problem, people_of, person_upsert
from lib.api.docs import ERROR_EXAMPLE, answered, asked, list_schema, write_schema
from lib.api.idempotency import plain_json
from memories.api import serializers as s
from memories.api.base import MemoryApi, PagedListApi
from memories.places import channel_problem, place_put, places_for


class DirectoryApi(MemoryApi):
    """Writes need the directory right: an agent's token that holds it, or an owner's session."""

    def require_directory_right(self) -> None:
        principal = self.principal()
        if principal.agent is not None:
            if principal.token is None or not principal.token.directory:
                raise exceptions.PermissionDenied("This token does not hold the directory right; an owner grants it.")
        elif not principal.is_owner:
            raise exceptions.PermissionDenied("Only owners, and agents holding the directory right, change records.")

    def directory_write(self, name: str, problem: str, serializer_class) -> dict:
        """A write's validated body, once the caller holds the right and the record's key in the path (`name`)
        has no `problem`."""
        self.require_directory_right()
        if problem:
            raise exceptions.ValidationError({name: [problem]})
        return self.validated(serializer_class)


PERSON_EXAMPLE = {
    "id": "7d2f5c9e-0b3c-4c1a-a1a2-2f3b4c5d6e7f",
    "handle": "U024BE7LH",
    "username": None,
    "display_name": "Mona Lisa",
    "can_sign_in": False,
    "active": True,
    "created_at": "2026-12-01T09:00:00Z",
}
PLACE_RECORD_EXAMPLE = {
    "channel": "C024BE91L",
    "kind": "private",
    "people": ["U024BE7LH", "max"],
    "created_at": "2026-12-01T09:00:00Z",
    "updated_at": "2026-12-01T09:00:00Z",
}


class PersonListApi(DirectoryApi, PagedListApi):
    serializer_class = s.PersonOutputSerializer
    model = Membership

    def rows(self, principal: Principal):
        rows = people_of(organisation=principal.organisation)
        token = principal.token
        if token is not None and token.restricted:
            rows = rows.filter(user_id__in=list(token.allowed_people))
        return rows

    @list_schema("people_list", s.PersonOutputSerializer, ("People", PERSON_EXAMPLE))
    def get(self, request):
        """List the people of your organisation.

        The organisation's people (handle, username, display name, whether they can sign in), as cursor pages. Owners
        and agents holding the directory right; a restricted token sees only its people.
        """
        self.require_directory_right()
        return self.answer_page(self.get_queryset())


DIRECTORY_REFUSED = OpenApiResponse(
    description="Neither an owner nor a token with the directory right, or a restricted token (it is named)."
)


def put_answers(record, refusals: dict[int, str]) -> dict:
    """A directory PUT's answers: the record (200 updated, 201 created), 403 without the right, and `refusals`."""
    refused = {status: OpenApiResponse(description=text) for status, text in refusals.items()}
    return dict(sorted({200: record, 201: record, 403: DIRECTORY_REFUSED, **refused}.items()))


class PersonDetailApi(DirectoryApi):
    @write_schema(
        operation_id="people_put",
        request=s.PersonInputSerializer,
        responses=put_answers(
            s.PersonOutputSerializer, {400: "The handle or the display name is malformed; it is named."}
        ),
        examples=[
            asked("A newcomer from chat", {"display_name": "Mona Lisa"}),
            answered("Created", PERSON_EXAMPLE, "201"),
            answered("Refused", ERROR_EXAMPLE, "400"),
        ],
    )
    def put(self, request, handle: str):
        """Create or update a directory person by handle.

        A person an integration knows by a chat handle: created (201) with no password, so they cannot sign in until
        invited, or updated (200). Their one stable id is what person memories and subjects store.
        """
        self.principal().refuse_if_restricted("create or rename people")
        data = self.directory_write("handle", handle_problem(handle), s.PersonInputSerializer)

        def write():
            principal = self.principal()
            membership, created = person_upsert(
                organisation=principal.organisation,
                handle=handle,
                display_name=data["display_name"],
                actor=principal.user,
                agent=principal.agent,
            )
            return put_answer(s.PersonOutputSerializer(membership).data, created)

        return self.idempotent("people-put", write, replay_stored)


class PlaceListApi(MemoryApi):
    @list_schema("places_list", s.PlaceOutputSerializer, ("Places", PLACE_RECORD_EXAMPLE))
    def get(self, request):
        """List the places you may use.

        Every place the caller may act in, with its kind and members' labels: a person's own DM, private channels
        listing them and public ones; an agent's, within its token's restriction.
        """
        principal = self.principal()
        records = places_for(organisation=principal.organisation, user=principal.user, token=principal.token)
        return Response(s.PlaceOutputSerializer(records, many=True).data)


class PlaceDetailApi(DirectoryApi):
    @write_schema(
        operation_id="places_put",
        request=s.PlaceInputSerializer,
        conflict=(
            "A DM stays with the person it was first recorded with and stays a DM; a place's kind changes only "
            "between private and public."
        ),
        responses=put_answers(s.PlaceOutputSerializer, {}),
        examples=[
            asked("A private channel", {"kind": "private", "people": ["U024BE7LH", "max"]}),
            answered("Recorded", PLACE_RECORD_EXAMPLE, "201"),
        ],
    )
    def put(self, request, channel: str):
        """Record a place: its kind and its whole membership.

        Creates (201) or updates (200) a place's record: `kind` and every member, by handle or username. Turn calls
        never change it; each change is audited. A DM keeps the one person it was recorded with and stays a DM; a
        place's kind changes only between `private` and `public` (409 otherwise, whoever asks).
        """
        principal = self.principal()
        principal.refuse_if_restricted("change a place's kind or people")
        data = self.directory_write("channel", channel_problem(channel), s.PlaceInputSerializer)

        def write():
            record, created = place_put(
                organisation=principal.organisation,
                channel=channel,
                kind=data["kind"],
                people=data["people"],
                actor=principal.user,
                agent=principal.agent,
            )
            return put_answer(s.PlaceOutputSerializer(record).data, created)

        return self.idempotent("places-put", write, replay_stored)


def put_answer(data: dict, created: bool) -> tuple[Response, None, dict]:
    """A directory write's answer (201 when it created the record), and what a retry replays: ids, labels
    and kinds, never a memory's text."""
    response = Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
    return response, None, {"status": response.status_code, "body": plain_json(response.data)}


def replay_stored(memory, extra: dict) -> Response:
    return Response(extra["body"], status=extra["status"])
