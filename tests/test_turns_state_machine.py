"""A Hypothesis state machine over three tenants and their people, through the real API.

Rules: remember, recall, render, replay, supersede, forget, erase a person,
let time pass (so facts expire), change a private channel's members (an
owner's explicit write), turn a channel public or private, try to rebind a DM
(another person, another kind: always 409), remove, restore and try to invite
a person (an owner's pages), people acting in places they are and are not in,
an owner restricting the agent's second token to some channels and people,
that token's turns, an agent (either token) reading, pinning, correcting or
forgetting a fact from a place it is or is not recallable in, and imports
(`manage.py import_memories`) of lines the rules accept or refuse, with and
without `--partial`. A small model keeps what each tenant's agent wrote, where,
and what became of it. After every step, every recall and render so far has:

- returned only rows of the caller's organisation;
- returned only rows recallable in that place (by the model's own reading of
  the scope rules, not the product's);
- returned no forgotten, erased, superseded or expired row, and no body of one;
- kept every scope's count limits, character budgets and per-fact clamp;
- replayed to the identical bytes, unless a fact has been erased since, in
  which case the replay names it and no longer holds its words;
- and nobody sees a row their place does not allow: a person's call in a
  place whose record does not have them answers 404, and no call, whatever
  people it names, changes who is in a place or what kind it is;
- a removed person reads and writes nothing until restored, and an owner's
  invitation never reaches an account its holder has;
- a restricted token's recall, render and list outside its channels and
  people answer 404, and it changes no place (403);
- an agent reads or changes a fact only from a place it could recall it in
  (404 elsewhere, and the row is as it was), whichever token it uses;
- an import with a refused line and no `--partial` wrote nothing and lists
  each refused line; otherwise its valid lines, and only those, are written,
  each in the scope the place's record allows, whatever place the line claims;
- and no row exists that the model does not know of.

Small render caps (set below) make the caps bind within a short run. Time is
moved with time-machine, never slept.
"""

from __future__ import annotations

import copy
import io
import itertools
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.db import transaction
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)
from rest_framework.test import APIClient

from accounts.models import AgentToken, Membership, User
from accounts.services import agent_create, organisation_create, user_create
from accounts.tokens import token_issue, token_restrict
from memories.models import Channel, ChannelMember, Memory
from memories.places import place_recorded

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

CAPS = {
    # Short facts meet the count limits first, long ones the budgets: both bind within a run.
    scope: {"profile_limit": 2, "recent_limit": 3, "profile_budget": 250, "recent_budget": 330, "fact_clamp": 90}
    for scope in ("workspace", "channel", "person")
}
# What the runs exercised, so the test fails if they stop reaching what they claim to check.
EXERCISED = {
    "capped renders": 0,
    "replays after an erasure": 0,
    "expired rows": 0,
    "people refused a place": 0,
    "people let into a place": 0,
    "membership changes": 0,
    "DM rebinds refused": 0,
    "kind changes": 0,
    "removed people refused": 0,
    "invitations refused": 0,
    "restrictions changed": 0,
    "restricted turns refused": 0,
    "restricted turns let in": 0,
    "facts refused outside their place": 0,
    "facts changed where recallable": 0,
    "imports refused whole": 0,
    "imports written in part": 0,
    "imported rows": 0,
}
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
TENANTS = 3
PEOPLE = 3


@dataclass
class Row:
    id: str
    org: int
    scope: str
    ref: str  # channel id or person id; "" for workspace
    body: str
    tier: str
    expires_at: datetime
    state: str = "live"  # live, superseded, forgotten
    supersedes: str = ""  # the version this one corrected
    superseded_by: str = ""

    def recallable_in(self, place: dict, people_ids: dict[str, str]) -> bool:
        if self.scope == "workspace":
            return True
        if self.scope == "channel":
            return self.ref == place["channel"]
        ids = {people_ids[name] for name in place["people"]}
        return place["kind"] == "dm" and ids == {self.ref}


@dataclass
class Tenant:
    index: int
    organisation_id: str
    agent: APIClient
    owner: object
    people: dict[str, str]  # username -> account id
    places: list[dict] = field(default_factory=list)  # the model's copy of each place's record
    persons: dict[str, APIClient] = field(default_factory=dict)  # username -> their signed-in client
    removed: set[str] = field(default_factory=set)  # usernames an owner removed (and has not restored)
    recorded: list[dict] = field(default_factory=list)  # the places as built, which each run starts from
    restricted: APIClient | None = None  # the same agent through its second token, restricted by an owner
    token: AgentToken | None = None  # that token
    allowed: tuple[set[str], set[str]] = field(default_factory=lambda: (set(), set()))  # channel ids, usernames
    restriction: tuple[set[str], set[str]] = field(default_factory=lambda: (set(), set()))  # as built

    def start_again(self) -> None:
        """The model as the database is at the start of a run (each run's writes are rolled back)."""
        self.places = copy.deepcopy(self.recorded)
        self.removed = set()
        self.allowed = copy.deepcopy(self.restriction)

    def token_may_act(self, place: dict) -> bool:
        """The model's reading of a restriction: a listed channel, or a DM with a listed person."""
        channels, people = self.allowed
        return place["channel"] in channels or (place["kind"] == "dm" and place["people"][0] in people)

    def owner_client(self) -> APIClient:
        client = APIClient()
        client.force_login(self.owner)
        return client


def build_tenants() -> list[Tenant]:
    tenants = []
    for index in range(TENANTS):
        organisation = organisation_create(slug=f"t{index}")
        owner = user_create(username=f"t{index}-owner", organisation=organisation, role=Membership.Role.OWNER)
        people = {}
        for number in range(PEOPLE):
            user = user_create(username=f"t{index}-p{number}", organisation=organisation, role=Membership.Role.MEMBER)
            people[user.username] = str(user.pk)
        agent, token = agent_create(organisation=organisation, name=f"t{index}-agent")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        names = sorted(people)
        places = [{"channel": f"D-{index}-{name}", "kind": "dm", "people": [name]} for name in names]
        places.append({"channel": f"G-{index}", "kind": "private", "people": names[:2]})
        places.append({"channel": f"C-{index}", "kind": "public", "people": []})
        for place in places:
            place_recorded(organisation=organisation, **place)
        persons = {}
        for name in names:
            persons[name] = APIClient()
            persons[name].force_login(User.objects.get(username=name))
        tenant = Tenant(index, str(organisation.pk), client, owner, people, persons=persons, recorded=places)
        tenant.token, raw = token_issue(agent=agent)
        tenant.restriction = ({f"G-{index}"}, {names[0]})
        token_restrict(token=tenant.token, restricted=True, channels=[f"G-{index}"], people=[names[0]])
        tenant.restricted = APIClient()
        tenant.restricted.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        tenant.start_again()
        tenants.append(tenant)
    return tenants


def person_may_use(place: dict, name: str, claimed: list[str]) -> bool:
    """The model's reading of who may act where: their own DM (naming nobody else for it), private
    channels listing them, public channels."""
    if place["kind"] == "public":
        return True
    if place["kind"] == "dm":
        return place["people"] == [name] and claimed == [name]
    return name in place["people"]


def expected_scope(place: dict, wanted: str | None, people_ids: dict[str, str]) -> tuple[str, str]:
    """The model's reading of the write rules: the narrowest scope the place allows."""
    if wanted == "workspace" and place["kind"] == "public":
        return "workspace", ""
    if place["kind"] == "dm" and len(place["people"]) == 1:
        return "person", people_ids[place["people"][0]]
    return "channel", place["channel"]


def remember_request(where: dict, body: str, wanted: str | None, tier: str, ttl: int) -> dict:
    """A remember request (the API's, and an import line's) for a fact said in `where`."""
    payload = {"body": body, "place": where, "tier": tier, "ttl_days": ttl}
    if where["kind"] != "dm":
        payload["subject_type"] = "workspace"  # outside a person scope a fact says whom it is about
    if wanted:
        payload["scope"] = wanted
    return payload


# An import line: valid, refused by the rules before anything is written, or refused when written (a DM's record
# names someone else); the place it is said in, whether it asks for workspace scope, days kept.
IMPORT_LINE = st.tuples(
    st.sampled_from(["valid", "valid", "valid", "pinned", "created_at", "expires_at", "not JSON", "someone's DM"]),
    st.integers(0, PEOPLE + 1),
    st.booleans(),
    st.integers(1, 20),
)
# What the API refuses, and so an import's check: a string for a boolean, times outside 1900-2999 in UTC.
BROKEN = {
    "pinned": {"pinned": "no"},
    "created_at": {"created_at": "0001-01-01T00:30:00+01:00"},
    "expires_at": {"expires_at": "9999-12-31T00:00:00Z"},
}

# What one remembered fact is made of: tenant, place, asks for workspace, tier, days kept, extra length.
FACT = {
    "tenant": st.integers(0, TENANTS - 1),
    # Weighted towards one DM and the public channel, so places fill up enough for the caps to bind.
    "place": st.sampled_from([0, 0, 1, 2, PEOPLE, PEOPLE + 1, PEOPLE + 1]),
    "workspace": st.booleans(),
    "tier": st.sampled_from(["profile", "profile", "log", "note"]),
    "ttl": st.integers(1, 20),
    "length": st.sampled_from([0, 0, 0, 10, 40, 120, 160]),  # mostly short, so the count limits bind too
}


class Turns(RuleBasedStateMachine):
    tenants: list[Tenant] = []

    def __init__(self):
        super().__init__()
        # Each run starts from the same tenants and leaves nothing behind.
        self.atomic = transaction.atomic()
        self.atomic.__enter__()
        self.clock = time_machine.travel(START, tick=False)
        self.traveller = self.clock.start()
        self.now = START
        self.rows: dict[str, Row] = {}
        self.erased_bodies: set[str] = set()
        self.renders: list[dict] = []
        self.counter = itertools.count()
        for tenant in self.tenants:
            tenant.start_again()

    def teardown(self):
        EXERCISED["expired rows"] += sum(1 for row in self.rows.values() if row.expires_at <= self.now)
        self.clock.stop()
        transaction.set_rollback(True)
        self.atomic.__exit__(None, None, None)

    # --- helpers -------------------------------------------------------------------

    def allowed(self, tenant: Tenant, place: dict) -> set[str]:
        return {
            row.id
            for row in self.rows.values()
            if row.org == tenant.index
            and row.state == "live"
            and row.expires_at > self.now
            and row.recallable_in(place, tenant.people)
        }

    def gone_bodies(self, tenant: Tenant, place: dict) -> set[str]:
        """Bodies that must not reach this place: other tenants', gone ones, and ones not recallable here."""
        allowed = self.allowed(tenant, place)
        return {row.body for row in self.rows.values() if row.id not in allowed} | self.erased_bodies

    def live_rows(self, tenant: int) -> list[Row]:
        return [row for row in self.rows.values() if row.org == tenant and row.state == "live"]

    # --- rules ---------------------------------------------------------------------

    @initialize(facts=st.lists(st.tuples(*FACT.values()), min_size=12, max_size=24))
    def some_facts_already(self, facts):
        # Enough facts from the start that renders have several per scope and the caps bind.
        for fact in facts:
            self.remember(*fact)

    @rule(**FACT)
    def remember(self, tenant, place, workspace, tier, ttl, length):
        t = self.tenants[tenant]
        where = t.places[place]
        marker = f"M{next(self.counter):04d}t{tenant}"
        body = f"{marker} " + ("likes tea " * 20)[:length] if length else marker
        wanted = "workspace" if workspace else None
        payload = remember_request(where, body.strip(), wanted, tier, ttl)
        response = t.agent.post("/api/v1/memories", payload, format="json")
        assert response.status_code == 201, response.content
        data = response.json()
        assert (data["scope"], data["scope_ref"]) == expected_scope(where, wanted, t.people)
        self.rows[data["id"]] = Row(
            data["id"], tenant, data["scope"], data["scope_ref"], body.strip(), tier, self.now + timedelta(days=ttl)
        )

    @rule(
        tenant=st.integers(0, TENANTS - 1),
        place=st.integers(0, PEOPLE + 1),
        facts=st.lists(st.tuples(FACT["tier"], FACT["length"]), min_size=3, max_size=6),
    )
    def crowd_a_place_then_render(self, tenant, place, facts):
        """Several facts at once in one place, so its render has more than the caps allow."""
        for tier, length in facts:
            self.remember(tenant, place, False, tier, 20, length)
        self.render(tenant, place)

    @rule(tenant=st.integers(0, TENANTS - 1), place=st.integers(0, PEOPLE + 1), restricted=st.booleans())
    def recall(self, tenant, place, restricted):
        """An agent recalls and lists where it serves, through either token."""
        t = self.tenants[tenant]
        if restricted:
            self.restricted_token_turn(t, t.places[place])
        else:
            self.recall_and_list(t, t.agent, t.places[place])

    def recall_and_list(self, t: Tenant, client: APIClient, where: dict) -> None:
        response = client.post("/api/v1/recall", {"place": where, "limit": 40}, format="json")
        assert response.status_code == 200, response.content
        returned = {row["id"] for row in response.json()["results"]}
        allowed = self.allowed(t, where)
        assert returned <= allowed, returned - allowed
        # Recent mode, no question: everything recallable here, when it fits the limit.
        if len(allowed) <= 40:
            assert returned == allowed, allowed - returned
        # Listing what it may see where it serves: its own organisation's rows, and of the live ones only
        # those it could recall there (seeing follows recall).
        listed = client.get("/api/v1/memories", {"page_size": 200, "place": where["channel"]}).json()["results"]
        assert {row["id"] for row in listed} <= {row.id for row in self.rows.values() if row.org == t.index}
        live = {row["id"] for row in listed if row["state"] == "live"}
        assert live <= allowed, live - allowed

    @rule(tenant=st.integers(0, TENANTS - 1), place=st.integers(0, PEOPLE + 1))
    def render(self, tenant, place):
        t = self.tenants[tenant]
        where = t.places[place]
        turn_id = f"turn-{next(self.counter)}"
        response = t.agent.post("/api/v1/render", {"place": where, "turn_id": turn_id}, format="json")
        assert response.status_code == 200, response.content
        data = response.json()
        allowed = self.allowed(t, where)
        ids = [fact["id"] for fact in data["facts"]]
        assert set(ids) <= allowed, set(ids) - allowed
        text = data["text"]
        for body in self.gone_bodies(t, where):
            assert body not in text, body
        self.check_caps(data["facts"])
        EXERCISED["capped renders"] += bool(data["omissions"])
        if ids:
            assert text.startswith("<memory>\n") and text.endswith("\n</memory>")
        again = t.agent.post("/api/v1/render", {"place": where, "turn_id": turn_id}, format="json").json()
        assert again["replayed"] and again["text"] == text
        self.renders.append(
            {"tenant": tenant, "turn_id": turn_id, "sha": data["sha256"], "ids": set(ids), "text": text}
        )

    def check_caps(self, facts: list[dict]) -> None:
        for scope, caps in CAPS.items():
            for section, limit, budget in (
                ("profile", caps["profile_limit"], caps["profile_budget"]),
                ("recent", caps["recent_limit"], caps["recent_budget"]),
            ):
                lines = [fact["line"] for fact in facts if fact["scope"] == scope and fact["section"] == section]
                assert len(lines) <= limit, (scope, section, lines)
                if len(lines) > 1:  # the first fact always fits; the clamp bounds it
                    assert sum(len(line) + 1 for line in lines) - 1 <= budget, (scope, section, lines)
        for fact in facts:
            text = fact["line"].split("] ", 1)[1]
            assert len(text) <= CAPS[fact["scope"]]["fact_clamp"], fact["line"]

    @precondition(lambda self: self.renders)
    @rule(data=st.data())
    def replay(self, data):
        self.replay_record(data.draw(st.sampled_from(self.renders)))

    def replay_record(self, record: dict) -> None:
        t = self.tenants[record["tenant"]]
        response = t.agent.post(f"/api/v1/injections/{record['turn_id']}/replay", {}, format="json")
        assert response.status_code == 200, response.content
        replay = response.json()
        erased = {row_id for row_id in record["ids"] if self.rows[row_id].state == "forgotten"}
        unavailable = {item["id"] for item in replay["unavailable"]}
        assert unavailable == erased
        if not erased:
            assert replay["identical"] and replay["text"] == record["text"]
        for row_id in erased:
            assert self.rows[row_id].body not in replay["text"]
        EXERCISED["replays after an erasure"] += bool(erased)

    @precondition(lambda self: any(self.rows[i].state != "forgotten" for r in self.renders for i in r["ids"]))
    @rule(data=st.data())
    def forget_a_rendered_fact_then_replay(self, data):
        record = data.draw(
            st.sampled_from([r for r in self.renders if any(self.rows[i].state != "forgotten" for i in r["ids"])])
        )
        row_id = data.draw(st.sampled_from(sorted(i for i in record["ids"] if self.rows[i].state != "forgotten")))
        self.forget_row(self.rows[row_id])
        self.replay_record(record)

    def corrected(self, row: Row, new: dict, body: str) -> None:
        assert (new["scope"], new["scope_ref"]) == (row.scope, row.ref)
        row.state, row.superseded_by = "superseded", new["id"]
        keep = timedelta(days=14 if row.tier == "note" else 90)  # a correction takes the tier's default expiry
        self.rows[new["id"]] = Row(
            new["id"], row.org, new["scope"], new["scope_ref"], body, row.tier, self.now + keep, supersedes=row.id
        )

    def forget_row(self, row: Row) -> None:
        t = self.tenants[row.org]
        place = next(p for p in t.places if row.recallable_in(p, t.people))
        # Another tenant's agent cannot forget it, from the same place of its own: 404, and it stays.
        other = self.tenants[(row.org + 1) % TENANTS]
        elsewhere = {"reason": "x", "place": other.places[t.places.index(place)]}
        assert other.agent.delete(f"/api/v1/memories/{row.id}", elsewhere, format="json").status_code == 404
        response = t.agent.delete(f"/api/v1/memories/{row.id}", {"reason": "asked", "place": place}, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["state"] == "erased" and response.json()["body"] == ""
        self.forgotten(row)

    def forgotten(self, row: Row) -> None:
        """Forgetting one version forgets them all (the earlier ones would still say it)."""
        versions = [row]
        while versions[0].supersedes:
            versions.insert(0, self.rows[versions[0].supersedes])
        while versions[-1].superseded_by:
            versions.append(self.rows[versions[-1].superseded_by])
        for version in versions:
            version.state = "forgotten"
            self.erased_bodies.add(version.body)

    @rule(tenant=st.integers(0, TENANTS - 1), person=st.integers(0, PEOPLE - 1))
    def erase_person(self, tenant, person):
        t = self.tenants[tenant]
        person_id = t.people[sorted(t.people)[person]]
        owner = APIClient()
        owner.force_login(t.owner)
        response = owner.post(f"/api/v1/subjects/user/{person_id}/erase", {"reason": "asked"}, format="json")
        assert response.status_code == 200, response.content
        erased = {receipt["id"] for receipt in response.json()["receipts"]}
        about = {
            row.id for row in self.rows.values() if row.org == tenant and row.scope == "person" and row.ref == person_id
        }
        assert erased == about
        for row_id in about:
            self.rows[row_id].state = "forgotten"
            self.erased_bodies.add(self.rows[row_id].body)

    @rule(tenant=st.integers(0, TENANTS - 1), members=st.sets(st.integers(0, PEOPLE - 1)))
    def owner_changes_who_is_in_the_private_channel(self, tenant, members):
        t = self.tenants[tenant]
        place = t.places[PEOPLE]
        names = sorted(sorted(t.people)[index] for index in members)
        owner = APIClient()
        owner.force_login(t.owner)
        response = owner.put(f"/api/v1/places/{place['channel']}", {"kind": "private", "people": names}, format="json")
        assert response.status_code == 200, response.content
        place["people"] = names
        place["kind"] = "private"
        EXERCISED["membership changes"] += 1

    @rule(
        tenant=st.integers(0, TENANTS - 1),
        # Weighted towards the two channels, whose kind may change; a DM is refused whatever is asked of it.
        which=st.sampled_from([0, PEOPLE - 1, PEOPLE, PEOPLE, PEOPLE + 1, PEOPLE + 1]),
        kind=st.sampled_from(["dm", "private", "public"]),
        others=st.sets(st.integers(0, PEOPLE - 1), min_size=1),
        who=st.sampled_from(["agent", "owner", "restricted"]),
    )
    def someone_changes_a_places_kind(self, tenant, which, kind, others, who):
        """A channel moves between private and public (audited); a DM stays a DM with its person and no channel
        becomes one: dm -> private -> other people -> dm, or public, is refused at each step, whoever asks. A
        restricted token changes no place, not even one of its own (403)."""
        t = self.tenants[tenant]
        place = t.places[which]
        client = {"agent": t.agent, "owner": t.owner_client(), "restricted": t.restricted}[who]
        if who == "restricted":
            body = {"kind": kind, "people": place["people"]}
            response = client.put(f"/api/v1/places/{place['channel']}", body, format="json")
            assert response.status_code == 403 and "restricted" in response.json()["detail"], response.content
        elif place["kind"] != "dm" and kind != "dm":
            kind = "public" if place["kind"] == "private" else "private"  # a channel's other kind: a change
            body = {"kind": kind, "people": place["people"]}
            response = client.put(f"/api/v1/places/{place['channel']}", body, format="json")
            assert response.status_code == 200, response.content
            EXERCISED["kind changes"] += 1
            place["kind"] = kind
        else:
            people = sorted(sorted(t.people)[index] for index in others)
            if people == place["people"] and kind == place["kind"]:
                people = sorted(t.people)  # the same record again would change nothing; name everyone instead
            response = client.put(f"/api/v1/places/{place['channel']}", {"kind": kind, "people": people}, format="json")
            # A DM naming several people is malformed (400) before it is a rebinding (409).
            assert response.status_code in ((400, 409) if kind == "dm" else (409,)), response.content
            EXERCISED["DM rebinds refused"] += 1
        self.memberships(tenant)

    @rule(
        tenant=st.integers(0, TENANTS - 1),
        person=st.integers(0, PEOPLE - 1),
        action=st.sampled_from(["remove", "restore", "invite"]),
    )
    def owner_manages_a_person(self, tenant, person, action):
        """An owner removes, restores, or tries to invite a member: an invitation never reaches their account,
        and a removed person reads nothing, even in their own DM."""
        t = self.tenants[tenant]
        name = sorted(t.people)[person]
        account = User.objects.filter(pk=t.people[name])
        before = account.values("username", "password", "is_active").get()
        owner = t.owner_client()
        if action == "invite":
            response = owner.post(f"/owners/people/{t.people[name]}/invite", {"username": f"{name}-new"})
            assert response.status_code == 302 and "invite-link" not in response.content.decode()
            assert account.values("username", "password", "is_active").get() == before
            EXERCISED["invitations refused"] += 1
            return
        response = owner.post(f"/owners/people/{t.people[name]}/{action}", {"confirm": "on"})
        assert response.status_code == 302, response.content
        after = account.values("username", "password", "is_active").get()
        assert (after["username"], after["password"]) == (before["username"], before["password"])
        assert after["is_active"] is (action == "restore")
        if action == "remove":
            t.removed.add(name)
        else:
            t.removed.discard(name)
        own_dm = t.places[person]
        self.person_turn(t, name, own_dm, own_dm)

    @rule(
        tenant=st.integers(0, TENANTS - 1),
        person=st.integers(0, PEOPLE - 1),
        claims=st.sets(st.integers(0, PEOPLE - 1)),
    )
    def a_person_acts_in_every_place(self, tenant, person, claims):
        """A person recalls and renders in each place, naming whoever they like; the record decides."""
        t = self.tenants[tenant]
        name = sorted(t.people)[person]
        before = self.memberships(tenant)
        for record in t.places:
            claimed = {**record, "people": sorted({name} | {sorted(t.people)[index] for index in claims})}
            self.person_turn(t, name, record, claimed)
        assert self.memberships(tenant) == before

    def person_turn(self, t: Tenant, name: str, record: dict, claimed: dict) -> None:
        client = t.persons[name]
        recalled = client.post("/api/v1/recall", {"place": claimed, "limit": 40}, format="json")
        turn_id = f"turn-{next(self.counter)}"
        rendered = client.post("/api/v1/render", {"place": claimed, "turn_id": turn_id}, format="json")
        if name in t.removed:
            assert recalled.status_code in (401, 403) and rendered.status_code in (401, 403)
            assert "results" not in recalled.json() and "text" not in rendered.json()
            listed = client.get("/api/v1/memories")
            assert listed.status_code in (401, 403) and "results" not in listed.json()
            EXERCISED["removed people refused"] += 1
            return
        if not person_may_use(record, name, claimed["people"]):
            assert recalled.status_code == rendered.status_code == 404, (recalled.content, rendered.content)
            assert "results" not in recalled.json() and "text" not in rendered.json()
            EXERCISED["people refused a place"] += 1
            return
        assert recalled.status_code == rendered.status_code == 200, (recalled.content, rendered.content)
        allowed = self.allowed(t, record)
        assert {row["id"] for row in recalled.json()["results"]} <= allowed
        assert {fact["id"] for fact in rendered.json()["facts"]} <= allowed
        for body in self.gone_bodies(t, record):
            assert body not in rendered.json()["text"], body
        EXERCISED["people let into a place"] += 1

    @rule(
        tenant=st.integers(0, TENANTS - 1),
        channels=st.sets(st.integers(0, PEOPLE + 1), max_size=2),
        people=st.sets(st.integers(0, PEOPLE - 1), max_size=2),
    )
    def owner_restricts_the_token(self, tenant, channels, people):
        """An owner lists other channels (a DM's channel id among them, maybe) and people for the second token."""
        t = self.tenants[tenant]
        listed = {t.places[index]["channel"] for index in channels}, {sorted(t.people)[index] for index in people}
        assert t.token is not None
        token_restrict(
            token=t.token, restricted=True, channels=sorted(listed[0]), people=sorted(listed[1]), actor=t.owner
        )
        t.allowed = listed
        EXERCISED["restrictions changed"] += 1

    def restricted_token_turn(self, t: Tenant, where: dict) -> None:
        """The restricted token recalls, renders and lists where it serves: inside its restriction, as any agent
        would there; outside, 404 and not a row."""
        client = t.restricted
        assert client is not None
        if t.token_may_act(where):
            self.recall_and_list(t, client, where)
            EXERCISED["restricted turns let in"] += 1
            return
        turn = {"place": where, "turn_id": f"turn-{next(self.counter)}"}
        answers = (
            client.post("/api/v1/recall", {"place": where, "limit": 40}, format="json"),
            client.post("/api/v1/render", turn, format="json"),
            client.get("/api/v1/memories", {"page_size": 200, "place": where["channel"]}),
        )
        for response in answers:
            assert response.status_code == 404, response.content
            assert not {"results", "text", "facts"} & set(response.json()), response.content
        EXERCISED["restricted turns refused"] += 1

    @precondition(lambda self: self.rows)
    @rule(
        data=st.data(),
        restricted=st.booleans(),
        # None: a place the fact is recallable in (as often as not, so facts are corrected and forgotten there).
        place=st.sampled_from([None, None, None, 0, 1, PEOPLE, PEOPLE + 1]),
        action=st.sampled_from(["get", "pin", "unpin", "correct", "correct", "forget", "forget"]),
    )
    def an_agent_reaches_for_a_fact(self, data, restricted, place, action):
        """An agent (either token) reads, pins, corrects or forgets a fact it holds, naming a place of its
        organisation: only where its token may act and the fact is recallable (seeing follows recall), even after
        it expired; elsewhere 404, the row untouched."""
        row = data.draw(st.sampled_from(sorted(self.rows.values(), key=lambda r: r.id)))
        t = self.tenants[row.org]
        where = next(p for p in t.places if row.recallable_in(p, t.people)) if place is None else t.places[place]
        client = t.restricted if restricted else t.agent
        assert client is not None
        stored = Memory.objects.filter(pk=row.id)
        before = stored.values("pinned", "redacted_at", "superseded_by").get()
        marker = f"M{next(self.counter):04d}t{row.org}"
        response = {
            "get": lambda: client.get(f"/api/v1/memories/{row.id}", {"place": where["channel"]}),
            "pin": lambda: client.post(f"/api/v1/memories/{row.id}/pin", {"place": where}, format="json"),
            "unpin": lambda: client.post(f"/api/v1/memories/{row.id}/unpin", {"place": where}, format="json"),
            "correct": lambda: client.post(
                f"/api/v1/memories/{row.id}/supersede", {"body": f"{marker} fixed", "place": where}, format="json"
            ),
            "forget": lambda: client.delete(f"/api/v1/memories/{row.id}", {"place": where}, format="json"),
        }[action]()
        if (restricted and not t.token_may_act(where)) or not row.recallable_in(where, t.people):
            assert response.status_code == 404, response.content
            assert row.id not in response.content.decode() and row.body not in response.content.decode()
            assert stored.values("pinned", "redacted_at", "superseded_by").get() == before
            EXERCISED["facts refused outside their place"] += 1
            return
        self.reached(row, action, response, f"{marker} fixed")

    def reached(self, row: Row, action: str, response, body: str) -> None:
        """What reaching for a fact where it is recallable answers, by what became of it."""
        if action == "get":
            assert response.status_code == (410 if row.state == "forgotten" else 200), response.content
            assert response.json()["id"] == row.id
        elif action == "forget":
            assert response.status_code == 200 and response.json()["state"] == "erased", response.content
            self.forgotten(row)
            # A turn that injected it replays without its words.
            injected = [record for record in self.renders if row.id in record["ids"]]
            if injected:
                self.replay_record(injected[-1])
        elif row.state != "live":  # only the current version is pinned or corrected, and never an erased one
            assert response.status_code == 400, response.content
        elif action == "correct":
            assert response.status_code == 201, response.content
            self.corrected(row, response.json(), body)
        else:
            assert response.status_code == 200 and response.json()["pinned"] is (action == "pin"), response.content
        EXERCISED["facts changed where recallable"] += action != "get"

    @rule(tenant=st.integers(0, TENANTS - 1), lines=st.lists(IMPORT_LINE, min_size=1, max_size=4))
    def an_import(self, tenant, lines):
        """`manage.py import_memories` of lines that claim places (a private channel as public, with everyone in
        it), some refused: without --partial, a refusal writes nothing; with it (the same file again) the valid
        lines land, as the records say."""
        t = self.tenants[tenant]
        text, expected, refused = self.import_file(t, lines)
        self.import_once(t, text, expected, refused, partial=False)
        if refused["check"] | refused["write"]:
            self.import_once(t, text, expected, refused, partial=True)

    def import_once(self, t: Tenant, text: str, expected: dict, refused: dict[str, set[int]], *, partial: bool):
        tenant = t.index
        assert not Memory.objects.exclude(pk__in=list(self.rows)).exists()  # every row is the model's
        listed, failed = run_import(t, text, partial)
        assert failed == bool(refused["check"] | refused["write"])
        early = refused["check"] and not partial  # refused at the check: the writes are not even tried
        assert listed == (refused["check"] if early else refused["check"] | refused["write"]), (listed, refused)
        new = Memory.objects.exclude(pk__in=list(self.rows)).values_list(
            "id", "organisation_id", "body", "scope", "scope_ref"
        )
        if failed and not partial:
            assert not new, new
            EXERCISED["imports refused whole"] += 1
            return
        landed = {body: (str(org), scope, ref) for _, org, body, scope, ref in new}
        assert len(landed) == len(new), new
        assert landed == {body: (t.organisation_id, *scope) for body, (scope, _) in expected.items()}
        for row_id, _, body, scope, ref in new:
            days = expected[body][1]
            self.rows[str(row_id)] = Row(str(row_id), tenant, scope, ref, body, "log", self.now + timedelta(days=days))
        EXERCISED["imports written in part"] += failed
        EXERCISED["imported rows"] += len(landed)

    def import_file(self, t: Tenant, lines: list) -> tuple[str, dict, dict[str, set[int]]]:
        """The file's text; the bodies of its valid lines, each with (scope, ref) and days kept; refused lines."""
        texts, expected, refused = [], {}, {"check": set(), "write": set()}
        names = sorted(t.people)
        for number, (kind, place, workspace, ttl) in enumerate(lines, start=1):
            where = t.places[place % PEOPLE if kind == "someone's DM" else place]
            marker = f"M{next(self.counter):04d}t{t.index}"
            wanted = "workspace" if workspace else None
            claimed = where if where["kind"] == "dm" else {**where, "kind": "public", "people": names}
            if kind == "someone's DM":  # its record is with one person; the line says another
                claimed = {**where, "people": [names[(names.index(where["people"][0]) + 1) % PEOPLE]]}
            line = {**remember_request(claimed, marker, wanted, "log", ttl), **BROKEN.get(kind, {})}
            texts.append('{"body": "' + marker if kind == "not JSON" else json.dumps(line))
            if kind == "valid":
                expected[marker] = (expected_scope(where, wanted, t.people), ttl)
            else:
                refused["write" if kind == "someone's DM" else "check"].add(number)
        return "\n".join(texts), expected, refused

    def memberships(self, tenant: int) -> dict[str, set[str]]:
        t = self.tenants[tenant]
        rows = ChannelMember.objects.filter(organisation_id=t.organisation_id).values_list(
            "channel__external_id", "user_id"
        )
        found: dict[str, set[str]] = {place["channel"]: set() for place in t.places}
        for channel, user_id in rows:
            found[channel].add(str(user_id))
        assert found == {place["channel"]: {t.people[n] for n in place["people"]} for place in t.places}
        kinds = dict(Channel.objects.filter(organisation_id=t.organisation_id).values_list("external_id", "kind"))
        assert kinds == {place["channel"]: place["kind"] for place in t.places}
        return found

    @rule(days=st.integers(1, 2))
    def time_passes(self, days):
        self.now += timedelta(days=days)
        self.traveller.move_to(self.now)


def run_import(t: Tenant, text: str, partial: bool) -> tuple[set[int], bool]:
    """`manage.py import_memories` of `text` as the tenant's agent: (the line numbers it lists as refused,
    whether it exited 1)."""
    handle, path = tempfile.mkstemp(suffix=".jsonl")
    with os.fdopen(handle, "w") as file:
        file.write(text)
    err = io.StringIO()
    args = [path, "--org", f"t{t.index}", "--agent", f"t{t.index}-agent", "--format", "jsonl"]
    try:
        call_command("import_memories", *args, *(["--partial"] if partial else []), stdout=io.StringIO(), stderr=err)
    except CommandError as error:
        assert error.returncode == 1 and "Traceback" not in err.getvalue(), (error, err.getvalue())
        failed = True
    else:
        failed = False
    finally:
        os.unlink(path)
    return {int(number) for number in re.findall(r"^line (\d+): ", err.getvalue(), re.MULTILINE)}, failed


def test_turns_keep_tenants_places_caps_and_erasures(settings):
    settings.EMBEDDER = "none"
    settings.MEMORY_API_RATE = "1000000/min"
    settings.MEMORY_RENDER_CAPS = CAPS
    Turns.tenants = build_tenants()
    run_state_machine_as_test(
        Turns,
        settings=hypothesis_settings(
            max_examples=12,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
            # No shrinking: a failure is reported as found, so a failing run stays as bounded as a passing one.
            phases=[Phase.explicit, Phase.generate],
        ),
    )
    assert all(EXERCISED.values()), EXERCISED
