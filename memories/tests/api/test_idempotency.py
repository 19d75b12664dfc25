"""An Idempotency-Key makes a retried remember return the first result instead of writing twice."""

from __future__ import annotations

from memories.models import Memory


def post(client, body, key, place):
    data = {"body": body, "place": place, "subject_type": "workspace"}
    return client.post("/api/v1/memories", data, format="json", HTTP_IDEMPOTENCY_KEY=key)


def test_a_retry_with_the_same_key_returns_the_first_result(agent_api, general):
    first = post(agent_api, "Deploys on Tuesday", "key-1", general)
    again = post(agent_api, "Deploys on Tuesday", "key-1", general)
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"] and again["Idempotent-Replayed"] == "true"
    assert Memory.objects.count() == 1


def test_the_same_key_with_a_different_body_is_refused_naming_the_header(agent_api, general):
    post(agent_api, "Deploys on Tuesday", "key-2", general)
    response = post(agent_api, "Deploys on Friday", "key-2", general)
    assert response.status_code == 422
    assert "Idempotency-Key" in response.json()["fields"]
    assert Memory.objects.count() == 1


def test_keys_belong_to_one_principal(agent_api, second_agent_api, general):
    post(agent_api, "Deploys on Tuesday", "key-3", general)
    assert post(second_agent_api, "Deploys on Tuesday", "key-3", general).status_code == 201
    assert Memory.objects.count() == 2


def test_a_retry_after_an_erasure_returns_the_receipt_not_the_text(agent_api, general):
    first = post(agent_api, "My code is 4321", "key-4", general).json()
    agent_api.delete(f"/api/v1/memories/{first['id']}", {"place": general}, format="json")
    again = post(agent_api, "My code is 4321", "key-4", general).json()
    assert again["id"] == first["id"] and again["body"] == "" and again["state"] == "erased"


def test_a_refused_write_does_not_burn_the_key(agent_api, general):
    assert post(agent_api, "x" * 2001, "key-5", general).status_code == 400
    assert post(agent_api, "Fine now", "key-5", general).status_code == 201
