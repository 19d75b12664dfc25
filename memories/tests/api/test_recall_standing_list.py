"""A standing instruction reaches a later request that shares only one of its words: the place's nearest profile
facts are offered as candidates whatever the word and vector lists hold, and only the best few standing facts
are raised to the first places, so instructions never crowd out the facts that answer the request. Scope rules
hold throughout."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.models import Memory
from memories.recall import contextual
from memories.recall.query import recall, run_plan
from memories.recall.ranking import DEFAULT_CONFIG
from memories.scopes import Place
from memories.tests.api.conftest import recorded
from memories.tests.api.helpers import remember, stub_vector
from memories.tests.recall_plans import contextual_request

VERSIONS = "Always include version numbers when mona asks about libraries (asked by mona)"
PAID = "Never suggest paid libraries (asked by mona)"
HIS = "Always answer max in German about libraries (asked by max)"
QUESTION = "Which libraries does my weather project use for charts?"
# What else was said in the DM: many lines share more of the request's words than the instructions do.
CHAT = [
    *(f"Charts of project {n} use a blue palette and weekly weather data" for n in range(8)),
    *(f"The weather station {n} reports rain every hour to the project" for n in range(8)),
    *(f"Mona read about the public libraries of town {n} and their charts of visitors" for n in range(50)),
    *(f"The weather on day {n} was mild and the project went well" for n in range(50)),
    *(f"Lunch on day {n} was soup and bread" for n in range(8)),
]


def settled(org) -> None:
    """Every fact's vector as the stand-in embedder answers for its text, and the facts written two hours
    apart, so no neighbour lends another its score and each is ranked on its own."""
    start = timezone.now() - timedelta(days=30)
    for index, memory in enumerate(Memory.objects.filter(organisation=org).order_by("created_at")):
        Memory.objects.filter(pk=memory.pk).update(
            embedding=stub_vector(memory.body),
            embedding_model="stand-in",
            created_at=start + timedelta(hours=2 * index),
        )


@pytest.fixture
def dm(org, agent_api, dm_with_mona, member):
    for body in (VERSIONS, PAID):
        assert remember(agent_api, dm_with_mona, body, tier="profile").status_code == 201
    for body in CHAT:
        assert remember(agent_api, dm_with_mona, body).status_code == 201
    settled(org)
    return Place("D-mona", "dm", (str(member.pk),))


def ranked(org, place, config=DEFAULT_CONFIG) -> list[tuple[str, float]]:
    """Every fact of the pool, best first, with its score; the newer-first rule off, since it reorders her
    own facts on one matter (these lines) after the standing rule placed its facts."""
    result = recall(
        organisation=org,
        place=place,
        question=QUESTION,
        limit=200,
        mode="contextual",
        ranking_config=replace(config, newer_first=False),
    )
    assert result.ranking["used"] == "contextual" and "semantic" in result.ranking["lists"]
    return [(row["body"], row["score"]) for row in result.rows]


def test_only_the_best_standing_instruction_is_raised_to_the_first_places(org, dm, stub_embedder):
    one = replace(DEFAULT_CONFIG, standing_kept=1)
    raised, plain = ranked(org, dm, one), ranked(org, dm, replace(one, standing_rank=0))
    order = [body for body, _ in raised]
    plain_order = [body for body, _ in plain]
    best = next(body for body in plain_order if body in (VERSIONS, PAID))  # the better of the two without the rule
    other = PAID if best == VERSIONS else VERSIONS
    assert plain_order.index(best) >= one.standing_rank  # positive control: below the first places
    assert order.index(best) == one.standing_rank - 1
    # The other keeps its score, and the rest keep their order.
    assert dict(raised)[other] == pytest.approx(dict(plain)[other])
    assert [body for body in order if body != best] == [body for body in plain_order if body != best]


def test_the_best_few_standing_instructions_are_raised_best_first(org, dm, stub_embedder):
    assert DEFAULT_CONFIG.standing_kept >= 2
    raised, plain = ranked(org, dm), ranked(org, dm, replace(DEFAULT_CONFIG, standing_rank=0))
    order = [body for body, _ in raised]
    plain_order = [body for body, _ in plain]
    best, other = sorted((VERSIONS, PAID), key=plain_order.index)
    assert plain_order.index(other) > DEFAULT_CONFIG.standing_rank  # positive control: below the first places
    assert order.index(best) == DEFAULT_CONFIG.standing_rank - 1
    assert order.index(other) == DEFAULT_CONFIG.standing_rank
    # His instruction is not offered in her DM, and the rest keep their order.
    assert HIS not in order
    assert [body for body in order if body not in (best, other)] == [
        body for body in plain_order if body not in (best, other)
    ]


def pool(org, place: Place, *, own_profile: int, shared_read: bool) -> set[str]:
    """The bodies the contextual statement reads for ranking (candidates and neighbours)."""
    request = replace(
        contextual_request(org, place=place, question=QUESTION, shared_read=shared_read), own_profile=own_profile
    )
    with connection.cursor() as cursor:
        rows, _, _ = run_plan(contextual.contextual_plan(request), cursor)
    return {row["body"] for row in rows}


@pytest.mark.parametrize("shared_read", [True, False])
def test_the_places_profile_facts_are_offered_when_the_lists_miss_them(org, dm, shared_read):
    # The request's vector is as far from the instructions as a vector can be, and a hundred lines hold more of
    # its words: neither list reaches them.
    farthest = [-value for value in stub_vector(QUESTION)]
    Memory.objects.filter(body__in=[VERSIONS, PAID]).update(embedding=farthest)
    assert {VERSIONS, PAID} <= pool(org, dm, own_profile=3, shared_read=shared_read)
    # Positive control: without them offered, the lists miss both.
    assert not {VERSIONS, PAID} & pool(org, dm, own_profile=0, shared_read=shared_read)


@pytest.mark.parametrize("shared_read", [True, False])
def test_another_persons_profile_facts_are_never_offered(org, dm, agent_api, second_member, shared_read):
    max_dm = recorded(org, {"channel": "D-max", "kind": "dm", "people": ["max"]})
    assert remember(agent_api, max_dm, HIS, tier="profile").status_code == 201
    # The nearest profile fact there is: his, the very vector of the request.
    Memory.objects.filter(body=HIS).update(embedding=stub_vector(QUESTION), embedding_model="stand-in")
    assert HIS not in pool(org, dm, own_profile=3, shared_read=shared_read)
    # Positive control: in his own DM it is offered, and mona's instructions are not.
    his_place = Place("D-max", "dm", (str(second_member.pk),))
    found = pool(org, his_place, own_profile=3, shared_read=shared_read)
    assert HIS in found and not {VERSIONS, PAID} & found
