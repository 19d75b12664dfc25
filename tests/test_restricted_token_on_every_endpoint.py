"""A restricted token acts only inside its restriction, on every endpoint of the URL conf.

One agent holds two tokens: one restricted to the channel `C-inside` and to DMs
with mona, one not. Each endpoint is probed outside the restriction: the
restricted token is refused (404 for places, threads, injections and memories
outside it; 403 naming the restriction for directory writes and subject
requests; lists leave out what lies outside), and the unrestricted token, the
positive control, is answered. The endpoints come from the URL conf, so a new
endpoint fails here until it is given its probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

import pytest
from rest_framework.test import APIClient

from accounts.tokens import token_issue, token_restrict
from memories.models import Channel, Memory
from memories.places import place_recorded
from memories.turns.writes import RememberRequest, memory_remember_in_place
from tests.api_routes import Endpoint, api_endpoints

pytestmark = pytest.mark.django_db

INSIDE = {"channel": "C-inside", "kind": "public", "people": []}
OUTSIDE = {"channel": "C-outside", "kind": "public", "people": []}
CLAIM = {
    "body": "The base rate is 4.75%",
    "slug": "sys:base-rate",
    "entity": "central-bank",
    "transparency": "ledger",
    "evidence_refs": [{"kind": "url", "ref": "https://bank.example/rates"}],
}


def event(event_id: str, place: dict) -> dict:
    return {
        "id": event_id,
        "role": "user",
        "author": "mona",
        "text": "hello",
        "time": "2026-11-30T10:00:00Z",
        "place": place,
    }


@dataclass
class World:
    restricted: APIClient
    unrestricted: APIClient
    outside_fact: str
    claim: str = ""


def client_with(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def world(org, member, second_member, agent_with_token, settings) -> World:
    settings.EMBEDDER = "none"
    agent, raw = agent_with_token
    place_recorded(organisation=org, **INSIDE)
    outside = place_recorded(organisation=org, **OUTSIDE)
    token, restricted_raw = token_issue(agent=agent)
    token_restrict(token=token, restricted=True, channels=["C-inside"], people=["mona"])
    fact, _ = memory_remember_in_place(
        RememberRequest(body="Outside fact", subject_type="workspace"), organisation=org, resolved=outside, writer=agent
    )
    return World(client_with(restricted_raw), client_with(raw), str(fact.pk))


def rendered_outside(world: World) -> None:
    answer = world.unrestricted.post("/api/v1/render", {"place": OUTSIDE, "turn_id": "turn-outside"}, format="json")
    assert answer.status_code == 200, answer.content


def thread_outside(world: World) -> None:
    events = {"events": [event("e-1", OUTSIDE)]}
    answer = world.unrestricted.post("/api/v1/threads/T-outside/events", events, format="json")
    assert answer.status_code == 201, answer.content


def claim_submitted(world: World) -> None:
    answer = world.unrestricted.post(
        "/api/v1/system-claims", {**CLAIM, "as_of": date.today().isoformat()}, format="json"
    )
    world.claim = answer.json()["id"]


def status(code: int) -> Callable:
    return lambda response: response.status_code == code


def restriction_named(response) -> bool:
    return response.status_code == 403 and "restricted" in response.json()["detail"]


def batch_item(state: str) -> Callable:
    return lambda response: response.status_code == 200 and response.json()["items"][0]["status"] == state


def listed(key: str, value: str, *, present: bool) -> Callable:
    def check(response) -> bool:
        data = response.json()
        rows = data["results"] if isinstance(data, dict) else data
        return response.status_code == 200 and (value in [row[key] for row in rows]) == present

    return check


@dataclass(frozen=True)
class Probe:
    """How to call one endpoint outside the restriction, and what each token must be answered."""

    send: Callable[[APIClient, World, Endpoint], object]
    restricted: Callable
    unrestricted: Callable
    prepare: Callable[[World], None] | None = None  # what the probe needs besides the world, made unrestricted


def at(data: dict | None = None, **path) -> Callable:
    return lambda client, world, endpoint: getattr(client, endpoint.method)(
        endpoint.path(memory_id=world.outside_fact, claim_id=world.claim, **path), data, format="json"
    )


def query(**params) -> Callable:
    return lambda client, world, endpoint: client.get(endpoint.path(memory_id=world.outside_fact), params)


OUTSIDE_WRITE = {"body": "Outside again", "place": OUTSIDE, "subject_type": "workspace"}
PROBES: dict[str, Probe] = {
    # Placeless: a claim goes to the stewards, and a claim is read by its id; no place is reached.
    "POST system-claims": Probe(at({**CLAIM, "slug": "sys:other", "as_of": "2026-11-30"}), status(201), status(201)),
    "GET system-claims/<uuid:claim_id>": Probe(at(), status(200), status(200), claim_submitted),
    "GET memories": Probe(query(place="C-outside"), status(404), listed("body", "Outside fact", present=True)),
    "POST memories": Probe(at(OUTSIDE_WRITE), status(404), status(201)),
    "POST memories/batch": Probe(at({"items": [OUTSIDE_WRITE]}), batch_item("refused"), batch_item("created")),
    "GET memories/<uuid:memory_id>": Probe(query(place="C-outside"), status(404), status(200)),
    "DELETE memories/<uuid:memory_id>": Probe(at({"place": OUTSIDE}), status(404), status(200)),
    "POST memories/<uuid:memory_id>/supersede": Probe(
        at({"body": "Changed", "place": OUTSIDE}), status(404), status(201)
    ),
    "POST memories/<uuid:memory_id>/pin": Probe(at({"place": OUTSIDE}), status(404), status(200)),
    "POST memories/<uuid:memory_id>/unpin": Probe(at({"place": OUTSIDE}), status(404), status(200)),
    "GET people": Probe(at(), listed("username", "max", present=False), listed("username", "max", present=True)),
    "PUT people/<str:handle>": Probe(at({"display_name": "Renamed"}, handle="U-new"), restriction_named, status(201)),
    "GET places": Probe(
        at(), listed("channel", "C-outside", present=False), listed("channel", "C-outside", present=True)
    ),
    # Its own channel, even: a restricted token changes no place's kind or people.
    "PUT places/<str:channel>": Probe(
        # (No channel becomes a DM, whoever asks: 409. Making it private with someone else is the change here.)
        at({"kind": "private", "people": ["max"]}, channel="C-inside"),
        restriction_named,
        status(200),
    ),
    "POST recall": Probe(at({"question": "fact", "place": OUTSIDE}), status(404), status(200)),
    "POST render": Probe(at({"place": OUTSIDE, "turn_id": "turn-probe"}), status(404), status(200)),
    "GET injections/<str:turn_id>": Probe(at(turn_id="turn-outside"), status(404), status(200), rendered_outside),
    "POST injections/<str:turn_id>/replay": Probe(
        at(turn_id="turn-outside"), status(404), status(200), rendered_outside
    ),
    "GET subjects/<str:subject_type>/<str:subject_id>/memories": Probe(
        at(subject_type="candidate", subject_id="c-1"), restriction_named, status(200)
    ),
    "POST subjects/<str:subject_type>/<str:subject_id>/erase": Probe(
        at({}, subject_type="candidate", subject_id="c-1"), restriction_named, status(200)
    ),
    # An event in its own channel, sent to a thread that happened outside it.
    "POST threads/<str:thread_id>/events": Probe(
        at({"events": [event("e-2", INSIDE)]}, thread_id="T-outside"), status(404), status(201), thread_outside
    ),
    "GET threads/<str:thread_id>": Probe(at(thread_id="T-outside"), status(404), status(200), thread_outside),
}


@pytest.mark.parametrize("endpoint", api_endpoints(), ids=str)
def test_a_restricted_token_acts_only_inside_its_restriction(world, endpoint):
    probe = PROBES.get(str(endpoint))
    assert probe is not None, f"{endpoint} has no probe: say what a restricted token may do there"
    if probe.prepare is not None:
        probe.prepare(world)
    refused = probe.send(world.restricted, world, endpoint)
    assert probe.restricted(refused), (refused.status_code, refused.content)
    allowed = probe.send(world.unrestricted, world, endpoint)
    assert probe.unrestricted(allowed), (allowed.status_code, allowed.content)


def test_a_restricted_token_records_a_dm_only_with_a_listed_person(world, org):
    """Recording a new DM from a turn call in its own channel id would reach the DM person's facts."""
    with_max = {"channel": "C-inside-dm", "kind": "dm", "people": ["max"]}
    refused = world.restricted.post("/api/v1/memories", {"body": "Hi", "place": with_max}, format="json")
    assert refused.status_code == 404
    assert not Channel.objects.filter(organisation=org, external_id="C-inside-dm").exists()
    with_mona = {"channel": "D-mona-2", "kind": "dm", "people": ["mona"]}
    assert (
        world.restricted.post("/api/v1/memories", {"body": "Hi", "place": with_mona}, format="json").status_code == 201
    )
    assert Memory.objects.filter(body="Hi").count() == 1
