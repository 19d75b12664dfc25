"""Schemathesis against /api/schema/: every operation, then stateful runs along the links it infers.

The API runs in-process (Django's WSGI application on the test database) as
an agent of an organisation that has the people the schema's examples name,
so generated requests reach the code behind validation as well as the
validation itself. Checks, on every response:

- not_a_server_error: no 5xx;
- response_schema_conformance: a documented status carries its documented shape;
- negative_data_rejection: data that breaks the schema is refused;
- ignored_auth: without credentials, or with wrong ones, nothing is served;
- use_after_free (stateful): a forgotten memory stays forgotten.

Bounded: a handful of examples per operation and mode, and a few short
stateful runs, so the whole file stays within about two minutes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import schemathesis
import yaml
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import FlakyStrategyDefinition
from hypothesis.stateful import run_state_machine_as_test
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    ignored_auth,
    negative_data_rejection,
    response_schema_conformance,
    use_after_free,
)

from accounts.models import Membership
from accounts.services import agent_create, user_create
from memories.places import place_recorded
from memories.turns.writes import RememberRequest, memory_remember_in_place

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

CHECKS = [not_a_server_error, response_schema_conformance, negative_data_rejection, ignored_auth]
STATEFUL_CHECKS = [*CHECKS, use_after_free]
EXAMPLES_PER_OPERATION = 20
STATEFUL_RUNS = 15
STATEFUL_STEPS = 10


class Credentials:
    """The current test's agent token; schemathesis asks for it through the auth provider below."""

    token = ""
    agent = None


HTTP_METHODS = {"get", "put", "post", "delete", "patch"}


def committed_operations() -> list[str]:
    """Every operation of the committed schema, as schemathesis labels it ("POST /api/v1/recall"): one test each,
    so pytest-xdist spreads the fuzzing over its workers (the committed schema is the served one: a test says so)."""
    paths = yaml.safe_load((Path(__file__).resolve().parent.parent / "openapi.yaml").read_text())["paths"]
    return [f"{method.upper()} {path}" for path, item in paths.items() for method in item if method in HTTP_METHODS]


@pytest.fixture(scope="module")
def served_schema(django_db_blocker):
    """The schema the API serves, loaded once per test process; each test's agent token reaches it at call time."""
    with django_db_blocker.unblock():
        schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    schema.config.generation.update(modes=list(GenerationMode), max_examples=EXAMPLES_PER_OPERATION)
    # A body past an endpoint's byte limit is refused before it is read, with 413: as much a refusal of bad
    # data as a 400 (the fuzzer reaches it with a long enough text).
    rejection = schema.config.checks.negative_data_rejection
    schema.config.checks.negative_data_rejection = type(rejection)(
        expected_statuses=[*rejection.expected_statuses, "413"]
    )

    @schema.auth(refresh_interval=None)
    class AgentToken:
        def get(self, case, context):
            return Credentials.token

        def set(self, case, data, context):
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}

    return schema


@pytest.fixture
def api_schema(served_schema, org, member, settings):
    settings.EMBEDDER = "none"
    settings.MEMORY_API_RATE = "1000000/min"  # the fuzzer is one fast caller; throttling has its own tests
    settings.BAD_TOKEN_RATE = "1000000/min"  # its ignored_auth check sends wrong tokens from one address
    # The people the schema's examples name, so examples reach the code behind validation.
    user_create(username="max", organisation=org, role=Membership.Role.MEMBER)
    Credentials.agent, Credentials.token = agent_create(organisation=org, name="fuzzer")
    schema = served_schema

    # As Django's own test client does: the test's connection holds the test's transaction,
    # so a request must not close it on the way in or out.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schema
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
        cache.clear()  # the wrong tokens it counted against this address must not bar the next test's calls


def _run(strategy, checks, succeeded: set[str]) -> list[str]:
    failures: list[str] = []

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
        derandomize=True,
        database=None,
    )
    def run(case):
        try:
            response = case.call_and_validate(checks=checks)
            if 200 <= response.status_code < 300:
                succeeded.add(case.operation.label)
        except (Exception, BaseExceptionGroup) as error:  # noqa: BLE001 - every failure is collected, then reported together
            failures.append(f"{case.operation.label} {case.meta.generation.mode if case.meta else ''}: {error}")

    run()
    return failures


# Operations whose generated requests must get past validation into the code behind it, not only into 400s.
MUST_SUCCEED = {
    "POST /api/v1/memories",
    "GET /api/v1/memories",
    "POST /api/v1/recall",
    "POST /api/v1/render",
    "POST /api/v1/system-claims",
    "POST /api/v1/threads/{thread_id}/events",
}


def test_the_fuzzed_operations_are_the_served_ones_and_include_those_that_must_succeed(served_schema):
    served = [result.ok().label for result in served_schema.get_all_operations()]
    assert len(served) >= 17
    assert sorted(served) == sorted(committed_operations())
    assert set(served) >= MUST_SUCCEED


@pytest.mark.parametrize("label", committed_operations())
def test_every_operation_holds_the_checks_on_positive_and_negative_data(api_schema, label):
    failures: list[str] = []
    succeeded: set[str] = set()
    [operation] = [result.ok() for result in api_schema.get_all_operations() if result.ok().label == label]
    for strategy in operation.get_strategies_from_examples():
        failures += _run(strategy, CHECKS, succeeded)
    for mode in GenerationMode:
        strategy = operation.as_strategy(generation_mode=mode, auth_storage=api_schema.auth)
        failures += _run(strategy, CHECKS, succeeded)
    assert not failures, "\n\n".join(dict.fromkeys(failures))
    if label in MUST_SUCCEED:
        assert label in succeeded, f"no request generated for {label} got past validation"


def stateful_runs(workflow, *, sessions: int = 3) -> None:
    """The state machine's runs, as schemathesis' own engine runs them: its scheduler adapts to what the server
    answered in earlier runs (and the server keeps what they wrote), so a replayed run can draw another step than
    the run it replays, which Hypothesis reports as `FlakyStrategyDefinition`. The engine then goes on in a fresh
    session with the next seed (`schemathesis.engine.fuzz._executor`); so does this, up to `sessions` times. A
    failed check is never retried: it raises its own error."""
    for session in range(sessions):
        if session:
            workflow._hypothesis_internal_use_seed = session  # the first session is derandomized
        try:
            run_state_machine_as_test(
                workflow,
                settings=settings(
                    max_examples=STATEFUL_RUNS,
                    stateful_step_count=STATEFUL_STEPS,
                    deadline=None,
                    suppress_health_check=list(HealthCheck),
                    derandomize=True,
                    database=None,
                ),
            )
            return
        except FlakyStrategyDefinition:
            if session == sessions - 1:
                raise


def test_stateful_runs_hold_the_checks_and_a_forgotten_memory_stays_forgotten(api_schema, org, member):
    # Facts the agent can see and change, so the links from listing to reading and forgetting have ids to follow.
    # (Written through the service: Django's test client would reconnect the signal the fixture took away.)
    place = place_recorded(organisation=org, channel="D-mona", kind="dm", people=[member.username])
    for body in ("Prefers tea", "Works from Leeds", "Allergic to nuts", "Calls the cat Miso"):
        memory_remember_in_place(RememberRequest(body=body), organisation=org, resolved=place, writer=Credentials.agent)
    calls: list[tuple[str, int]] = []
    machine = api_schema.as_state_machine()

    class Workflow(machine):
        def validate_response(self, response, case, **kwargs):
            calls.append((f"{case.operation.method.upper()} {case.operation.path}", response.status_code))
            case.validate_response(response, checks=STATEFUL_CHECKS)

    stateful_runs(Workflow)
    # The runs ran: every step's response went through the checks, and some were answered with data. Whether a
    # run forgets one of the facts and then reads it again depends on Hypothesis' sequence, which any change to
    # the schema's text reseeds, so that use after free is made once, deterministically, below.
    assert len(calls) >= STATEFUL_RUNS and any(200 <= code < 300 for _, code in calls), calls
    client = Client(HTTP_AUTHORIZATION=f"Bearer {Credentials.token}")
    kept, _ = memory_remember_in_place(
        RememberRequest(body="Forget me"), organisation=org, resolved=place, writer=Credentials.agent
    )
    dm = json.dumps({"place": {"channel": "D-mona", "kind": "dm", "people": [member.username]}})
    assert client.delete(f"/api/v1/memories/{kept.id}", dm, content_type="application/json").status_code == 200
    assert client.get(f"/api/v1/memories/{kept.id}", {"place": "D-mona"}).status_code == 410
