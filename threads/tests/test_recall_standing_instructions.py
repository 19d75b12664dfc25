"""End to end: a standing instruction said in a DM becomes a profile fact about its speaker, with its source, and a
later request there that shares one word with it brings it back; another person's DM never does."""

from __future__ import annotations

import pytest

from memories.embeddings.writes import memory_embed_batch
from memories.models import Bucket, Memory, Scope, Tier
from memories.recall.query import recall
from memories.scopes import Place
from threads.consolidation import thread_consolidate
from threads.models import Learning

pytestmark = pytest.mark.django_db

INSTRUCTION = "Always include version numbers when I ask about libraries."
LEARNED = "Always include version numbers when mona asks about libraries (asked by mona)"
HIS = "Always answer in short sentences when I ask about deployments."
HIS_LEARNED = "Always answer in short sentences when max asks about deployments (asked by max)"
# A later request: it shares "libraries" with the instruction and nothing else.
REQUEST = "Which charting libraries would suit my weather app?"
CHAT = [
    "The weather app shows a chart of the week.",
    "I finished the settings screen of the app today.",
    "The forecast chart looks odd on small phones.",
    "My sprint ends on Friday and the app is nearly done.",
    "I want the chart colours to match the app theme.",
    "The weather data comes from a free public service.",
    "I still need to test the app on a tablet.",
    "The chart should show rain as blue bars.",
    "Yesterday I fixed the login bug that kept logging people out.",
    "The map view loads slowly when there are many stations.",
    "My designer suggested a darker theme for the night mode.",
    "I deployed a preview build for my friends to try.",
    "Temperatures should be shown in Celsius by default.",
    "The app crashed once when the network dropped.",
    "I added a widget that shows today's forecast on the home screen.",
    "Users asked for hourly rain probabilities.",
    "I am thinking about adding air quality to the app.",
    "The icons for snow and sleet look too similar.",
    "My plan is to publish the app in the store next month.",
    "The weekly chart needs a legend for the colours.",
    "I set up automatic backups of the settings.",
    "The wind arrows on the map point the wrong way.",
    "I wrote tests for the forecast parser this morning.",
    "The app should remember the last city a user viewed.",
]


@pytest.fixture
def max_dm(second_member):
    return {"channel": "D-max", "kind": "dm", "people": [second_member.username]}


def bodies_recalled(org, person, channel: str) -> list[str]:
    place = Place(channel, "dm", (str(person.pk),))
    return [row["body"] for row in recall(organisation=org, place=place, question=REQUEST, limit=10).rows]


def test_an_instruction_is_a_profile_fact_recalled_in_its_dm_and_not_in_anothers(
    org, member, second_member, post_events, dm_with, max_dm, episodes_on
):
    thread = post_events("T-1", [("mona", line) for line in [INSTRUCTION, *CHAT]], place=dm_with)
    post_events("T-1", [("max", HIS), ("max", "The deployment to staging failed twice.")], place=max_dm)
    thread_consolidate(thread_id=thread.pk)
    # The worker embeds learned facts after consolidation commits (episodes are embedded in the run itself).
    memory_embed_batch(
        ids=[str(pk) for pk in Memory.objects.filter(embedding__isnull=True).values_list("pk", flat=True)]
    )

    fact = Memory.objects.get(body=LEARNED)
    assert (fact.bucket, fact.tier, fact.scope, fact.scope_ref) == (
        Bucket.LEARNED,
        Tier.PROFILE,
        Scope.PERSON,
        str(member.pk),
    )
    assert fact.subject_id == str(member.pk)
    learning = Learning.objects.get(memory=fact)
    assert [source.event.text for source in learning.sources.select_related("event")] == [INSTRUCTION]

    assert LEARNED in bodies_recalled(org, member, "D-mona")
    in_his_dm = bodies_recalled(org, second_member, "D-max")
    assert LEARNED not in in_his_dm
    # Positive control: his own instruction, said in his DM, is recalled there by the same request.
    assert HIS_LEARNED in in_his_dm
    assert HIS_LEARNED not in bodies_recalled(org, member, "D-mona")
