"""The write rules the database holds since migration 0012, each proven twice: the service (or the API) names
the field, and a raw SQL write that skips it is refused by PostgreSQL, with a positive control."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from memories.models import Memory
from memories.tests.api.helpers import remember
from memories.tests.test_memory_rules import field_error, raw_insert, refused_by

pytestmark = pytest.mark.django_db


# --- Times within 1900-2999 in UTC ------------------------------------------------


@pytest.mark.parametrize("column", ["created_at", "occurred_at", "valid_from", "valid_until", "expires_at"])
def test_a_time_outside_the_range_is_refused_by_the_database(org, column):
    raw_insert(org, **{column: datetime(1900, 1, 1, tzinfo=UTC)})  # the positive control: the first instant
    with refused_by("memories_times_in_range"):
        raw_insert(org, **{column: datetime(1899, 12, 31, 23, 30, tzinfo=UTC)})
    with refused_by("memories_times_in_range"):
        raw_insert(org, **{column: datetime(3000, 1, 1, tzinfo=UTC)})


def test_the_service_names_a_time_outside_the_range(make_memory):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(occurred_at=datetime(1899, 12, 31, 23, 30, tzinfo=UTC))
    assert "1899 in UTC" in field_error(excinfo, "occurred_at")
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    "field, value",
    [
        ("occurred_at", "1900-01-01T00:30:00+01:00"),  # 1899 once in UTC
        ("expires_at", "2999-12-31T23:30:00-01:00"),  # 3000 once in UTC
        ("expires_at", "9999-12-31T00:00:00Z"),
    ],
)
def test_the_api_refuses_a_time_that_leaves_the_range_in_utc(agent_api, general, field, value):
    answer = remember(agent_api, general, "The office closes at 6", **{field: value})
    assert answer.status_code == 400 and field in answer.json()["fields"]
    batch = agent_api.post(
        "/api/v1/memories/batch",
        {"items": [{"body": "Fact", "place": general, "subject_type": "workspace", field: value}]},
        format="json",
    )
    assert batch.json()["items"][0]["status"] == "refused"
    assert not Memory.objects.exists()


# --- A person's own fact is about them ---------------------------------------------


def test_a_person_cannot_save_a_fact_about_someone_else(member_api, general, second_member, member):
    planted = remember(member_api, general, "My city is Springfield", subject_type="user", subject_id="max")
    assert planted.status_code == 400 and "subject_id" in planted.json()["fields"]
    assert not Memory.objects.exists()
    own = remember(member_api, general, "My city is Leeds", subject_type="user", subject_id=member.username)
    assert own.status_code == 201  # the positive control: about themself
    assert Memory.objects.get().subject_id == str(member.pk)


def test_a_persons_batch_refuses_the_item_about_someone_else(member_api, general, second_member, member):
    fact = {"body": "My city", "place": general, "subject_type": "user"}
    answer = member_api.post(
        "/api/v1/memories/batch",
        {"items": [{**fact, "subject_id": "max"}, {**fact, "subject_id": member.username}]},
        format="json",
    )
    first, second = answer.json()["items"]
    assert first["status"] == "refused" and "subject_id" in first["error"]["fields"]
    assert second["status"] == "created"  # the positive control
    assert list(Memory.objects.values_list("subject_id", flat=True)) == [str(member.pk)]


def test_the_database_refuses_a_persons_fact_about_someone_else(org, member, second_member):
    own = dict(bucket="user", subject_type="user", owner_id=str(member.pk))
    raw_insert(org, **own, subject_id=str(member.pk))  # the positive control
    with refused_by("memories_own_fact_about_its_writer"):
        raw_insert(org, **own, subject_id=str(second_member.pk))
    with refused_by("memories_own_fact_about_its_writer"):
        raw_insert(org, bucket="user", subject_type="user", subject_id=str(member.pk))  # no owner at all
    # A row kept from before the rule is quarantined, not refused.
    raw_insert(org, **own, subject_id=str(second_member.pk), quarantined_at=timezone.now())


# --- What consolidation learns is never for the workspace ---------------------------


def test_the_database_refuses_a_workspace_fact_learned_from_thread_events(org, agent):
    learned = dict(bucket="learned", author="model", agent_id=str(agent.pk), scope="workspace")
    raw_insert(org, **learned, source_kind="message")  # the positive control: an agent's explicit write
    with refused_by("memories_learned_never_workspace"):
        raw_insert(org, **learned, source_kind="thread_event")


def test_the_service_names_the_scope_of_a_workspace_fact_from_thread_events(make_memory, agent):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(
            bucket="learned", author="model", owner=None, written_by=None, agent=agent, source_kind="thread_event"
        )
    assert "never the workspace" in field_error(excinfo, "scope")
