"""One exception per API error, retries that honour Retry-After, and writes that are safe to retry."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import httpx
import pytest
from archivist_client import Archivist, Conflict, LimitReached, NotFound, Refused, Throttled, Unauthenticated
from django.utils import timezone

from memories.models import Author, Bucket, Memory, SourceKind


def test_a_refusal_names_its_fields(live_api):
    with Archivist(live_api.url, live_api.token, place=live_api.dm) as archivist, pytest.raises(Refused) as refused:
        archivist.recall(question="x", limit=1000)
    assert refused.value.status == 400 and "limit" in refused.value.fields
    assert "at most" in refused.value.fields["limit"][0]


def test_unknown_ids_are_not_found_and_a_bad_token_unauthenticated(live_api):
    with Archivist(live_api.url, live_api.token, place=live_api.dm) as archivist, pytest.raises(NotFound):
        archivist.get(uuid.uuid4())
    with Archivist(live_api.url, "not-a-token", place=live_api.dm) as stranger, pytest.raises(Unauthenticated):
        stranger.get(uuid.uuid4())


def test_a_full_agent_gets_limit_reached(live_api, settings):
    expires = timezone.now() + timedelta(days=30)
    Memory.objects.bulk_create(
        Memory(
            organisation=live_api.organisation,
            agent=live_api.agent,
            bucket=Bucket.LEARNED,
            author=Author.MODEL,
            source_kind=SourceKind.MESSAGE,
            body=f"fact {index}",
            expires_at=expires,
        )
        for index in range(settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT)
    )
    with Archivist(live_api.url, live_api.token, place=live_api.general) as archivist, pytest.raises(LimitReached):
        archivist.remember(body="One too many", subject_type="workspace")


def test_every_write_carries_an_idempotency_key_so_a_retry_writes_once(live_api):
    sent = []

    def record(request: httpx.Request) -> None:
        sent.append(request.headers.get("Idempotency-Key"))

    http = httpx.Client(
        base_url=live_api.url + "/api/v1/",
        headers={"Authorization": f"Bearer {live_api.token}"},
        event_hooks={"request": [record]},
    )
    with Archivist(live_api.url, live_api.token, place=live_api.general, http=http) as archivist:
        archivist.remember(body="Written with a key", subject_type="workspace")
        archivist.recall(question="key")
        assert sent[0] and sent[1] is None  # a write carries a key, a read none
        again = archivist.remember(body="Same key", idempotency_key="k-1", subject_type="workspace")
        replayed = archivist.remember(body="Same key", idempotency_key="k-1", subject_type="workspace")
    assert replayed.id == again.id
    assert Memory.objects.filter(body="Same key").count() == 1


def test_a_key_reused_for_another_request_is_a_conflict(live_api):
    with Archivist(live_api.url, live_api.token, place=live_api.general) as archivist:
        archivist.remember(body="First", idempotency_key="k-2", subject_type="workspace")
        with pytest.raises(Conflict) as conflict:
            archivist.remember(body="Second", idempotency_key="k-2", subject_type="workspace")
    assert conflict.value.status == 422 and "Idempotency-Key" in conflict.value.fields


def test_throttled_names_retry_after_when_retries_are_off(live_api):
    live_api.throttle_token(seconds_left=30)
    with (
        Archivist(live_api.url, live_api.token, place=live_api.dm, max_retries=0) as archivist,
        pytest.raises(Throttled) as throttled,
    ):
        list(archivist.list())
    assert throttled.value.status == 429 and 1 <= throttled.value.retry_after <= 30


def test_a_throttled_call_is_retried_after_retry_after(live_api):
    live_api.throttle_token(seconds_left=1)
    with Archivist(live_api.url, live_api.token, place=live_api.general) as archivist:
        started = time.monotonic()
        remembered = archivist.remember(body="Waited my turn", subject_type="workspace")
        waited = time.monotonic() - started
    assert remembered.body == "Waited my turn"
    assert waited >= 1.0  # the server's Retry-After, not an immediate retry


def test_a_retry_after_beyond_the_longest_wait_is_not_waited_for(live_api):
    live_api.throttle_token(seconds_left=50)
    with Archivist(live_api.url, live_api.token, place=live_api.dm, max_retry_wait=5) as archivist:
        started = time.monotonic()
        with pytest.raises(Throttled):
            list(archivist.list())
    assert time.monotonic() - started < 5
