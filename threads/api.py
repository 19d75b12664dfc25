"""Thread ingest: `POST /api/v1/threads/{thread_id}/events`, and the thread's consolidation state.

Agents post what happened in a thread; consolidation turns it into learned
memories in the background, so the call never waits for it.
"""

from __future__ import annotations

import re

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response

from lib.api.docs import ERROR_EXAMPLE, PLACE_EXAMPLE, answered, asked, read_schema, write_schema
from lib.api.errors import error_body
from lib.api.idempotency import idempotent_response
from lib.api.views import ApiView
from lib.fields import StrictDateTimeField, optional_text
from memories.api.serializers import BatchErrorOutputSerializer, PlaceSerializer, StrictSerializer
from threads.ingest import EventsRefused, IngestOutcome, RefusedEvent, thread_events_ingest
from threads.models import THREAD_ID_PATTERN, Learning, Thread, ThreadEvent
from threads.selectors import thread_episodes_status, thread_within_restriction

MAX_EVENTS_PER_CALL = 100
_THREAD_ID = re.compile(THREAD_ID_PATTERN)


class EventInputSerializer(StrictSerializer):
    """One event. Its text keeps invisible characters (real chat carries RTL marks); they are shown as
    visible marks wherever the text reaches a prompt (lib.text.neutralise). Ids and authors refuse them."""

    identifier_fields = ("id", "author")

    id = optional_text(200, help_text="Your id for the event; resent ids are skipped.")
    role = serializers.ChoiceField(
        choices=ThreadEvent.Role.choices,
        error_messages={"invalid_choice": "{input!r} is not a role; use user, assistant, system or tool."},
    )
    author = optional_text(200, help_text="Who wrote it: for people, a handle or a username.")
    text = serializers.CharField(
        max_length=settings.THREAD_EVENT_MAX_CHARS,
        trim_whitespace=False,
        error_messages={
            "max_length": f"An event's text is at most {settings.THREAD_EVENT_MAX_CHARS} characters.",
            "blank": "An event needs text; it is empty.",
        },
    )
    time = StrictDateTimeField(help_text="When it happened (RFC 3339, with its offset).")
    place = PlaceSerializer()


class IngestInputSerializer(StrictSerializer):
    events = serializers.ListField(
        child=EventInputSerializer(),
        min_length=1,
        max_length=MAX_EVENTS_PER_CALL,
        error_messages={
            "min_length": "Send at least one event.",
            "max_length": f"At most {MAX_EVENTS_PER_CALL} events per call; send the rest in another.",
        },
    )
    episodes = serializers.BooleanField(
        required=False,
        help_text="Keep this thread's events as recallable episodes (default true); false keeps facts only. "
        "Remembered for the thread; the organisation's policy can also turn episodes off.",
    )


class IngestedEventSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="The event's position in `events`, from 0.")
    id = serializers.CharField()
    sequence = serializers.IntegerField(allow_null=True)
    duplicate = serializers.BooleanField()


class RefusedEventSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="The event's position in `events`, from 0.")
    error = BatchErrorOutputSerializer(help_text="Why it was refused, in the API's error shape.")


class IngestOutputSerializer(serializers.Serializer):
    thread = serializers.CharField()
    accepted = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    refused = serializers.IntegerField(help_text="Events refused for who or where they name; not stored.")
    events = IngestedEventSerializer(many=True, help_text="The events stored or already stored, in order.")
    refusals = RefusedEventSerializer(many=True, help_text="The refused events, in order.")
    consolidated_through = serializers.IntegerField()
    last_sequence = serializers.IntegerField()


class IngestRefusedOutputSerializer(serializers.Serializer):
    error = serializers.CharField()
    detail = serializers.CharField()
    fields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))  # type: ignore[assignment]  # the error shape's `fields`
    refusals = RefusedEventSerializer(
        many=True,
        required=False,
        help_text="Every event, each with why it was refused (absent when the Idempotency-Key is the conflict).",
    )


def refusals_of(refused: list[RefusedEvent]) -> list[dict]:
    return [{"index": event.index, "error": error_body(event.code, event.detail, event.fields)} for event in refused]


class LearnedOutputSerializer(serializers.Serializer):
    memory = serializers.UUIDField()
    key = serializers.CharField()
    sources = serializers.ListField(child=serializers.IntegerField(), help_text="Sequences of the events.")


class EpisodesOutputSerializer(serializers.Serializer):
    enabled = serializers.BooleanField(help_text="Both the organisation's policy and the thread keep episodes.")
    kept = serializers.IntegerField(help_text="Live episodes of this thread.")
    bound_per_place = serializers.IntegerField(help_text="The most live episodes one place keeps.")
    expired_by_bound = serializers.IntegerField(help_text="Episodes expired early because a place was full.")
    notice = serializers.CharField(help_text="Why episodes are off, or that some expired early; empty otherwise.")


class ConflictOutputSerializer(serializers.Serializer):
    memory = serializers.UUIDField(help_text="The inferred fact, kept aside.")
    conflicts_with = serializers.UUIDField(help_text="The person's own fact it contradicts.")
    key = serializers.CharField(help_text="The normalised fact key both facts share.")
    state = serializers.CharField(help_text="pending, accepted or dismissed: what the person decided.")


class ThreadOutputSerializer(serializers.Serializer):
    thread = serializers.CharField()
    last_sequence = serializers.IntegerField(help_text="The sequence of the thread's newest event; 0 when empty.")
    consolidated_through = serializers.IntegerField(help_text="Events up to this sequence are consolidated.")
    consolidated_at = serializers.DateTimeField(allow_null=True)
    consolidation_error = serializers.CharField(help_text="Why the last consolidation failed; empty when it did not.")
    learned = LearnedOutputSerializer(many=True)
    episodes = EpisodesOutputSerializer()
    conflicts = ConflictOutputSerializer(many=True)


INGEST_EXAMPLE = {
    "events": [
        {
            "id": "msg-1001",
            "role": "user",
            "author": "mona",
            "text": "Call me Mo, and my timezone is CET.",
            "time": "2026-11-30T09:00:00Z",
            "place": PLACE_EXAMPLE,
        },
        {
            "id": "msg-1002",
            "role": "assistant",
            "author": "helper",
            "text": "Noted, Mo.",
            "time": "2026-11-30T09:00:02Z",
            "place": PLACE_EXAMPLE,
        },
    ]
}


REFUSED_FIELDS_EXAMPLE = {"events.1.place.people": ["Not a person of your organisation: helpr."]}
REFUSED_EVENT_EXAMPLE = {
    "index": 1,
    "error": {
        "error": "invalid",
        "detail": "events.1.place.people: Not a person of your organisation: helpr.",
        "fields": REFUSED_FIELDS_EXAMPLE,
    },
}


class _ThreadApi(ApiView):
    def agent_principal(self):
        principal = self.principal()
        if principal.agent is None:
            raise exceptions.PermissionDenied("Thread events are posted by agents, with their Bearer token.")
        return principal

    @staticmethod
    def checked_thread_id(thread_id: str) -> str:
        if not _THREAD_ID.match(thread_id):
            raise exceptions.ValidationError(
                {
                    "thread_id": [
                        "A thread id is 1 to 200 letters, digits and . _ : @ -, starting with a letter or digit."
                    ]
                }
            )
        return thread_id

    def thread_in_reach(self, thread_id: str) -> Thread | None:
        """The thread (None when there is none yet), if the caller's token reaches every place it happened in;
        404 when it does not, the answer a thread that is not there gets."""
        principal = self.principal()
        thread = Thread.objects.filter(organisation=principal.organisation, external_id=thread_id).first()
        if thread is not None and not thread_within_restriction(thread=thread, token=principal.token):
            raise exceptions.NotFound("No thread with this id.")
        return thread

    def thread_or_404(self, thread_id: str) -> Thread:
        thread = self.thread_in_reach(thread_id)
        if thread is None:
            raise exceptions.NotFound("No thread with this id.")
        return thread


# The events endpoint's schema description: how events are stored and refused, and how a long message is sent.
INGEST_RULES = (
    "Stores up to 100 events of a thread (each with the `place` it happened in); resent event ids are skipped. An "
    "event in a place the caller may not act in, or whose place names someone who is not a person of the "
    "organisation, is refused on its own (`refusals`, each naming its index and fields, e.g. "
    "`events.3.place.people`) and the rest are stored; when every event is refused nothing is stored and the answer "
    "is 422. Consolidation turns explicit statements into learned memories in the background, with the events as "
    "their sources. Agents only."
)

LONG_MESSAGES = (
    "An event's text holds up to 100,000 characters (ARCHIVIST_THREAD_EVENT_MAX_CHARS) and the request up to 2 MiB "
    "(ARCHIVIST_THREAD_EVENTS_MAX_REQUEST_BYTES), each refused by name past its limit. A longer message is posted "
    "as consecutive events of one message, in order, with the same time, each with its own `id` made of the "
    "message's id and the part's number (`msg-1001.1`, `msg-1001.2`): events have no message id of their own, and "
    "ids must differ, since a resent id is skipped. Each part becomes episodes of its own."
)


class ThreadEventsApi(_ThreadApi):
    max_request_bytes = settings.THREAD_EVENTS_MAX_REQUEST_BYTES

    @write_schema(
        summary="Ingest thread events; learned memories follow in the background",
        description=f"{INGEST_RULES}\n\n{LONG_MESSAGES}",
        operation_id="threads_ingest_events",
        request=IngestInputSerializer,
        responses={
            201: IngestOutputSerializer,
            200: OpenApiResponse(
                IngestOutputSerializer, description="No event was new: each was already stored or refused."
            ),
            400: OpenApiResponse(description="The request is malformed; the field is named, and nothing is stored."),
            403: OpenApiResponse(description="Only agents post thread events."),
            413: OpenApiResponse(
                description=f"The body is over {settings.THREAD_EVENTS_MAX_REQUEST_BYTES} bytes, this endpoint's "
                "limit (ARCHIVIST_THREAD_EVENTS_MAX_REQUEST_BYTES); nothing is read."
            ),
            422: OpenApiResponse(
                IngestRefusedOutputSerializer,
                description="Every event was refused, or the Idempotency-Key was used for another request; "
                "nothing is stored.",
            ),
        },
        examples=[
            asked("Two events of a DM", INGEST_EXAMPLE),
            answered(
                "One stored, one refused",
                {
                    "thread": "T-42",
                    "accepted": 1,
                    "duplicates": 0,
                    "refused": 1,
                    "events": [{"index": 0, "id": "msg-1001", "sequence": 1, "duplicate": False}],
                    "refusals": [REFUSED_EVENT_EXAMPLE],
                    "consolidated_through": 0,
                    "last_sequence": 1,
                },
                "201",
            ),
            answered("Refused", ERROR_EXAMPLE, "400"),
            answered(
                "Every event refused",
                {
                    "error": "invalid",
                    "detail": "Every event was refused; nothing was stored.",
                    "fields": REFUSED_FIELDS_EXAMPLE,
                    "refusals": [REFUSED_EVENT_EXAMPLE],
                },
                "422",
            ),
        ],
    )
    def post(self, request, thread_id: str):
        """Ingest thread events; learned memories follow in the background (the schema's description says how)."""
        principal = self.agent_principal()
        thread_id = self.checked_thread_id(thread_id)
        self.thread_in_reach(thread_id)
        data = self.validated(IngestInputSerializer)

        def write():
            response = self.ingest(principal, thread_id, data)
            # Ids, sequence numbers and counts only: a retry is answered from them, never from the events' text.
            return response, None, {"status": response.status_code, "body": response.data}

        return idempotent_response(
            self.request,
            self.principal(),
            "thread-events",
            write,
            lambda memory, extra: Response(extra["body"], status=extra["status"]),
        )

    def ingest(self, principal, thread_id: str, data: dict) -> Response:
        try:
            thread, outcome = thread_events_ingest(
                organisation=principal.organisation,
                agent=principal.agent,
                thread_id=thread_id,
                events=data["events"],
                episodes=data.get("episodes"),
                token=principal.token,
            )
        except EventsRefused as refusal:
            body = error_body(refusal.code, refusal.message, refusal.fields())
            return Response({**body, "refusals": refusals_of(refusal.refused)}, status=refusal.http_status)
        return Response(
            ingested(thread, outcome), status=status.HTTP_201_CREATED if accepted(outcome) else status.HTTP_200_OK
        )


def accepted(outcome: IngestOutcome) -> int:
    return sum(not event.duplicate for event in outcome.events)


def ingested(thread: Thread, outcome: IngestOutcome) -> dict:
    """The answer to an ingest that stored (or had already stored) some of its events."""
    stored = accepted(outcome)
    return {
        "thread": thread.external_id,
        "accepted": stored,
        "duplicates": len(outcome.events) - stored,
        "refused": len(outcome.refused),
        "events": [
            {
                "index": event.index,
                "id": event.external_id,
                "sequence": event.sequence or None,
                "duplicate": event.duplicate,
            }
            for event in outcome.events
        ],
        "refusals": refusals_of(outcome.refused),
        "consolidated_through": thread.consolidated_through,
        "last_sequence": thread.last_sequence,
    }


class ThreadDetailApi(_ThreadApi):
    @read_schema(
        operation_id="threads_read",
        responses={200: ThreadOutputSerializer, 404: OpenApiResponse(description="No thread with this id.")},
        examples=[
            OpenApiExample(
                "Consolidated",
                value={
                    "thread": "T-42",
                    "last_sequence": 2,
                    "consolidated_through": 2,
                    "consolidated_at": "2026-11-30T09:00:03Z",
                    "consolidation_error": "",
                    "learned": [
                        {"memory": "5f0c8a52-1e8e-4a7a-9f3c-3a1f1b0f9d21", "key": "called", "sources": [1]},
                    ],
                    "episodes": {
                        "enabled": True,
                        "kept": 2,
                        "bound_per_place": 20000,
                        "expired_by_bound": 0,
                        "notice": "",
                    },
                    "conflicts": [],
                },
            )
        ],
    )
    def get(self, request, thread_id: str):
        """A thread's consolidation state and the memories learned from it.

        How far consolidation has read the thread, its last error, and each memory the caller's agent learned from it
        with the sequences of its source events.
        """
        principal = self.agent_principal()
        thread = self.thread_or_404(self.checked_thread_id(thread_id))
        learnings = list(
            Learning.objects.filter(organisation=principal.organisation, thread=thread, memory__agent=principal.agent)
            .prefetch_related("events")
            .order_by("created_at", "id")
        )
        return Response(
            {
                "thread": thread.external_id,
                "last_sequence": thread.last_sequence,
                "consolidated_through": thread.consolidated_through,
                "consolidated_at": thread.consolidated_at,
                "consolidation_error": thread.consolidation_error,
                "learned": [
                    {
                        "memory": learning.memory_id,
                        "key": learning.key,
                        "sources": sorted(event.sequence for event in learning.events.all()),
                    }
                    for learning in learnings
                    if not learning.conflict
                ],
                "episodes": thread_episodes_status(thread=thread, agent=principal.agent),
                "conflicts": [
                    {
                        "memory": learning.memory_id,
                        "conflicts_with": learning.conflicts_with_id,
                        "key": learning.key,
                        "state": learning.conflict,
                    }
                    for learning in learnings
                    if learning.conflict
                ],
            }
        )
