"""Small helpers shared by the agent-turn API tests."""

from __future__ import annotations

from rest_framework.test import APIClient


def session_client(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def remember(client, place, body, **extra):
    return client.post("/api/v1/memories", {"body": body, "place": place, **extra}, format="json")


def recall(client, place, question="", **extra):
    return client.post("/api/v1/recall", {"question": question, "place": place, **extra}, format="json")


def render(client, place, turn_id, **extra):
    return client.post("/api/v1/render", {"place": place, "turn_id": turn_id, **extra}, format="json")
