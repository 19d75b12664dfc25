"""Issue 15, round six: a recall's or a render's question is embedded while its token's round trip is in flight,
only for a token that authenticated in this process lately; the token's statement still decides the request.

The embedder is the OpenAI-compatible stand-in on loopback (an outside service). Each test holds the
token's statement until the question reaches the stand-in, or until a short wait runs out: a question
embedded ahead arrives while the statement is held, one embedded by the view only after it ran.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import pytest
from django.db import connection

from accounts.auth import TOKEN_HASH_STATEMENT
from accounts.models import AgentToken, hash_token
from accounts.tokens import token_revoke
from memories.embeddings import ahead
from memories.tests.api.helpers import recall, remember, render
from memories.tests.loopback import EmbeddingsStandIn

QUESTION = "Where does Mona keep the spare keys?"
# Long enough for a question embedded ahead to arrive however loaded the machine; a wait that runs out
# is the expected outcome only where nothing is embedded ahead.
ARRIVES_WITHIN = 10.0
NEVER_ARRIVES_WITHIN = 0.5


class WatchedStandIn(EmbeddingsStandIn):
    """The embeddings stand-in, telling when a text has arrived."""

    def __init__(self):
        super().__init__()
        self.arrived = threading.Event()

    def handle(self, path, body):
        if QUESTION in ((body or {}).get("input") or []):
            self.arrived.set()
        return super().handle(path, body)

    def count(self, text: str) -> int:
        return self.inputs().count(text)


@pytest.fixture
def stand_in(settings):
    ahead.forget_trusted()
    with WatchedStandIn() as server:
        settings.EMBEDDER = "openai"
        settings.EMBEDDER_OPENAI_BASE_URL = server.base_url
        settings.EMBEDDER_OPENAI_MODEL = "stand-in"
        yield server
    ahead.forget_trusted()


@contextmanager
def token_statement_held(stand_in: WatchedStandIn, *, wait: float):
    """Hold the token's statement until the question reaches the stand-in (or `wait` runs out); the dict
    says whether it had arrived when the statement was sent."""
    seen: dict = {}

    def hold(execute, sql, params, many, context):
        if sql.startswith(TOKEN_HASH_STATEMENT):  # the token's round trip, its read prepared or whole
            seen["arrived_before_token_statement"] = stand_in.arrived.wait(wait)
        return execute(sql, params, many, context)

    stand_in.arrived.clear()
    with connection.execute_wrapper(hold):
        yield seen


def test_a_trusted_tokens_question_is_embedded_while_its_token_statement_waits(agent_api, general, stand_in):
    remember(agent_api, general, "The spare keys are under the blue pot")
    with token_statement_held(stand_in, wait=NEVER_ARRIVES_WITHIN) as first:
        answered_first = recall(agent_api, general, QUESTION)
    # Positive control: the token had not authenticated yet, so its first question waited for it.
    assert first["arrived_before_token_statement"] is False
    with token_statement_held(stand_in, wait=ARRIVES_WITHIN) as second:
        answered_second = recall(agent_api, general, QUESTION)
    assert second["arrived_before_token_statement"] is True
    assert answered_second.status_code == answered_first.status_code == 200
    assert answered_second.json()["results"] == answered_first.json()["results"]
    assert answered_second.json()["ranking"]["used"] == "contextual"
    assert stand_in.count(QUESTION) == 2  # once a call: the view used the vector made ahead


def test_a_forged_token_costs_no_embedding(api_client_with, agent_api, general, stand_in):
    recall(agent_api, general, "any question")  # some token is trusted here, just not this one
    forged = api_client_with("Bearer not-a-token-anyone-was-given")
    with token_statement_held(stand_in, wait=NEVER_ARRIVES_WITHIN) as held:
        answered = recall(forged, general, QUESTION)
    assert answered.status_code == 401
    assert held["arrived_before_token_statement"] is False
    assert not stand_in.arrived.wait(NEVER_ARRIVES_WITHIN)
    assert stand_in.count(QUESTION) == 0


def test_a_revoked_token_is_refused_whatever_was_embedded_ahead(agent_api, agent_with_token, general, stand_in):
    recall(agent_api, general, "any question")
    token_revoke(token=AgentToken.objects.get(token_hash=hash_token(agent_with_token[1])))
    with token_statement_held(stand_in, wait=ARRIVES_WITHIN) as held:
        answered = recall(agent_api, general, QUESTION)
    assert held["arrived_before_token_statement"] is True  # still trusted here: embedded ahead, in vain
    assert answered.status_code == 401


@pytest.mark.parametrize("extra", [{"mode": "lexical"}, {"mode": "recent"}], ids=["lexical", "recent"])
def test_a_mode_that_needs_no_vector_embeds_nothing(agent_api, general, stand_in, extra):
    recall(agent_api, general, "any question")
    with token_statement_held(stand_in, wait=NEVER_ARRIVES_WITHIN) as held:
        answered = recall(agent_api, general, QUESTION, **extra)
    assert answered.status_code == 200
    assert held["arrived_before_token_statement"] is False
    assert stand_in.count(QUESTION) == 0


def test_the_vector_made_ahead_is_used_only_for_the_question_recall_is_given(agent_api, general, stand_in):
    recall(agent_api, general, "any question")
    with token_statement_held(stand_in, wait=ARRIVES_WITHIN) as held:
        answered = recall(agent_api, general, f"  {QUESTION}\n")  # the serializer trims it to QUESTION
    assert held["arrived_before_token_statement"] is True
    assert answered.status_code == 200
    assert stand_in.count(QUESTION) == 1  # trimmed ahead as the serializer trims: not embedded twice


def test_a_question_over_the_limit_is_refused_and_not_embedded(agent_api, general, stand_in):
    recall(agent_api, general, "any question")
    answered = recall(agent_api, general, QUESTION + "x" * 2_000)
    assert answered.status_code == 400
    assert "question" in answered.json()["fields"]
    assert stand_in.inputs() == ["any question"]


def test_trust_lasts_its_time_and_is_per_token(monkeypatch):
    ahead.forget_trusted()
    ahead.trust("a")
    assert ahead.trusted("a") and not ahead.trusted("b")
    monkeypatch.setattr(ahead, "TRUST_SECONDS", -1.0)
    ahead.trust("c")
    assert not ahead.trusted("c")  # expired as soon as given
    assert ahead.trusted("a")
    monkeypatch.setattr(ahead, "TRUST_SECONDS", 600.0)
    monkeypatch.setattr(ahead, "TRUSTED_TOKENS", 2)
    ahead.trust("d")
    ahead.trust("e")
    assert not ahead.trusted("a") and ahead.trusted("e")  # the oldest is forgotten first
    ahead.forget_trusted()


@pytest.fixture
def api_client_with():
    from rest_framework.test import APIClient

    def make(authorization: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=authorization)
        return client

    return make


def test_a_renders_question_is_embedded_ahead_too(agent_api, general, stand_in):
    remember(agent_api, general, "The spare keys are under the blue pot")
    with token_statement_held(stand_in, wait=NEVER_ARRIVES_WITHIN) as first:
        rendered_first = render(agent_api, general, "turn-1", question=QUESTION)
    assert first["arrived_before_token_statement"] is False  # control: not trusted yet
    with token_statement_held(stand_in, wait=ARRIVES_WITHIN) as second:
        rendered_second = render(agent_api, general, "turn-2", question=QUESTION)
    assert second["arrived_before_token_statement"] is True
    assert rendered_first.status_code == rendered_second.status_code == 200
    assert rendered_second.json()["facts"] == rendered_first.json()["facts"]
    assert "blue pot" in rendered_second.json()["text"]
    assert stand_in.count(QUESTION) == 2
