"""Bad input answers 400 naming the field (and the limit), and writes nothing."""

from __future__ import annotations

import pytest

from memories.models import Channel, IdempotencyKey, Injection, Memory
from memories.tests.api.helpers import recall, remember, render

RECORDED_BY_FIXTURES = ("D-mona", "C-general", "G-team")


def assert_refused(response, field: str, *, contains: str = "") -> None:
    assert response.status_code == 400, response.content
    data = response.json()
    assert data["error"] == "invalid"
    assert field in data["fields"], data
    if contains:
        assert contains in " ".join(data["fields"][field]), data
    assert Memory.objects.count() == 0 and Injection.objects.count() == 0
    # No place is recorded by a refused call: only the fixtures' recorded places exist.
    assert not Channel.objects.exclude(external_id__in=RECORDED_BY_FIXTURES).exists()


@pytest.mark.parametrize("field", ["scoep", "organisation_extra", "bodyy"])
def test_an_unknown_field_is_refused_by_name(agent_api, general, field):
    assert_refused(remember(agent_api, general, "A fact", **{field: "x"}), field, contains="Unknown field")


def test_an_unknown_field_inside_place_is_refused_by_name(agent_api, general):
    assert_refused(remember(agent_api, {**general, "topic": "x"}, "A fact"), "place.topic")


@pytest.mark.parametrize("field", ["organisation", "owner", "user_id"])
def test_a_body_naming_the_tenant_or_owner_is_refused_saying_why(agent_api, general, field):
    assert_refused(remember(agent_api, general, "A fact", **{field: "x"}), field, contains="come from your credentials")


@pytest.mark.parametrize("body", ["", "   ", "\n\t"])
def test_an_empty_body_is_refused(agent_api, general, body):
    assert_refused(remember(agent_api, general, body), "body")


def test_a_body_over_the_limit_is_refused_naming_the_limit(agent_api, general):
    assert_refused(remember(agent_api, general, "x" * 2001), "body", contains="2000")


def test_a_nul_byte_in_the_body_is_refused(agent_api, general):
    assert_refused(remember(agent_api, general, "before\x00after"), "body")


@pytest.mark.parametrize("char", ["\x07", "\x1b", "\x7f", "\x0b"])
def test_control_characters_in_the_body_are_refused(agent_api, general, char):
    assert_refused(remember(agent_api, general, f"before{char}after"), "body", contains="control characters")


def test_a_recall_limit_above_40_is_refused_naming_the_limit(agent_api, general):
    assert_refused(recall(agent_api, general, "tea", limit=41), "limit", contains="40")


def test_an_unknown_recall_mode_is_refused(agent_api, general):
    assert_refused(recall(agent_api, general, "tea", mode="magic"), "mode")


def test_an_unknown_place_kind_is_refused(agent_api, general):
    assert_refused(remember(agent_api, {**general, "kind": "group"}, "A fact"), "place.kind", contains="'group'")


def test_a_new_place_naming_someone_outside_the_organisation_is_refused(agent_api, outsider):
    # A place seen first is recorded from the call, so its people must be people of the organisation.
    response = remember(agent_api, {"channel": "G-new", "kind": "private", "people": [outsider.username]}, "A fact")
    assert_refused(response, "place.people", contains="otto")


def test_a_dm_with_nobody_in_it_is_refused(agent_api):
    assert_refused(remember(agent_api, {"channel": "D-1", "kind": "dm", "people": []}, "A fact"), "place.people")


def test_an_agent_asking_for_person_scope_in_a_group_channel_is_refused_saying_how(agent_api, private_team):
    response = remember(agent_api, private_team, "Likes tea", scope="person")
    assert_refused(response, "scope", contains="only_for")


def test_malformed_json_is_refused(agent_api):
    response = agent_api.post("/api/v1/memories", data='{"body": "x", ', content_type="application/json")
    assert_refused(response, "json", contains="Malformed JSON")


def test_a_body_that_is_not_an_object_is_refused(agent_api):
    response = agent_api.post("/api/v1/memories", data="[1, 2]", content_type="application/json")
    assert response.status_code == 400 and Memory.objects.count() == 0


def test_a_wrong_content_type_is_refused_naming_it(agent_api):
    response = agent_api.post("/api/v1/memories", data="body=x", content_type="application/x-www-form-urlencoded")
    assert_refused(response, "Content-Type", contains="application/json")


def test_nan_is_not_json(agent_api, general):
    response = agent_api.post(
        "/api/v1/recall",
        data='{"question": "x", "place": {"channel": "c", "kind": "public"}, "limit": NaN}',
        content_type="application/json",
    )
    assert_refused(response, "json")


def test_deeply_nested_json_is_refused_not_a_server_error(agent_api):
    response = agent_api.post("/api/v1/recall", data="[" * 100_000 + "]" * 100_000, content_type="application/json")
    assert response.status_code == 400


def test_expiry_given_twice_is_refused(agent_api, general):
    assert_refused(remember(agent_api, general, "A fact", ttl_days=3, expires_at="2099-01-01T00:00:00Z"), "ttl_days")


def test_an_expiry_in_the_past_is_refused(agent_api, general):
    assert_refused(remember(agent_api, general, "A fact", expires_at="2001-01-01T00:00:00Z"), "expires_at")


def test_a_candidate_without_a_subject_id_is_refused(agent_api, general):
    assert_refused(remember(agent_api, general, "Good at SQL", subject_type="candidate"), "subject_id")


def test_a_bad_turn_id_is_refused(agent_api, general):
    response = render(agent_api, general, "turn/../42")
    assert_refused(response, "turn_id")


def test_a_malformed_idempotency_key_is_refused_naming_the_header(agent_api, general):
    response = agent_api.post(
        "/api/v1/memories",
        {"body": "x", "place": general},
        format="json",
        HTTP_IDEMPOTENCY_KEY="x" * 201,
    )
    assert_refused(response, "Idempotency-Key")
    assert IdempotencyKey.objects.count() == 0
