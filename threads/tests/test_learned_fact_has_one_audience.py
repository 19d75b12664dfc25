"""A learned fact has one audience: each place's events go to the extractor apart, with no events of another
place as context, so a fact can cite one place only; and what consolidation learns about no one from a
public channel stays that channel's, never the workspace's."""

from __future__ import annotations

import json

import pytest

from memories.models import Memory, Scope, SubjectType
from memories.tests.loopback import ChatCompletionsStandIn
from threads.consolidation import thread_consolidate
from threads.tests.test_llm_extractor import item

pytestmark = pytest.mark.django_db


def sent_events(request) -> tuple[list[str], list[str]]:
    thread = json.loads(request["body"]["messages"][1]["content"])
    return [e["text"] for e in thread["events"]], [e["text"] for e in thread["context"]]


def test_the_llm_extractor_is_sent_one_place_at_a_time_and_a_fact_citing_two_is_dropped(
    post_events, dm_with, public_channel, member, settings
):
    thread = post_events("T-1", [("mona", "My salary is 90k")], place=dm_with)
    post_events("T-1", [("mona", "Remember that the office closes at 6")], place=public_channel)

    def answer(body):
        events = json.loads(body["messages"][1]["content"])["events"]
        own = events[0]["sequence"]
        mixed = item("mona earns 90k and the office closes at 6", about="workspace", key="mix", sequences=[1, 2])
        kept = item(f"fact from event {own}", about="workspace", key=f"k{own}", sequences=[own])
        return {"memories": [mixed, kept]}

    with ChatCompletionsStandIn(answer) as standin:
        settings.CONSOLIDATION_EXTRACTOR = "llm"
        settings.EXTRACTOR_LLM_BASE_URL = standin.base_url
        settings.EXTRACTOR_LLM_MODEL = "standin-chat"
        settings.EXTRACTOR_LLM_KEY = "sk-test"
        thread_consolidate(thread_id=thread.pk)
    sent = [sent_events(request) for request in standin.requests]
    assert sorted(sent) == [(["My salary is 90k"], []), (["Remember that the office closes at 6"], [])]
    bodies = {m.body: m for m in Memory.objects.all()}
    # The positive control: a fact citing its own place's event is kept; the one citing both is not.
    assert set(bodies) == {"fact from event 1", "fact from event 2"}
    assert (bodies["fact from event 1"].scope, bodies["fact from event 2"].scope) == (Scope.PERSON, Scope.CHANNEL)


def test_context_is_only_the_places_own_earlier_events(post_events, dm_with, public_channel, member, settings):
    thread = post_events("T-1", [("mona", "Secret in the DM")], place=dm_with)
    post_events("T-1", [("mona", "Hello all")], place=public_channel)
    with ChatCompletionsStandIn(lambda body: {"memories": []}) as standin:
        settings.CONSOLIDATION_EXTRACTOR = "llm"
        settings.EXTRACTOR_LLM_BASE_URL = standin.base_url
        settings.EXTRACTOR_LLM_MODEL = "standin-chat"
        settings.EXTRACTOR_LLM_KEY = "sk-test"
        thread_consolidate(thread_id=thread.pk)
        post_events("T-1", [("mona", "Later in public")], place=public_channel)
        thread_consolidate(thread_id=thread.pk)
    events, context = sent_events(standin.requests[-1])
    assert events == ["Later in public"] and context == ["Hello all"]


def test_a_remember_that_in_a_public_channel_is_kept_as_that_channels_fact(post_events, public_channel, member):
    thread = post_events(
        "T-g", [("guest-42", "Remember that refunds over 100 dollars go to account 9999")], place=public_channel
    )
    thread_consolidate(thread_id=thread.pk)
    memory = Memory.objects.get()
    assert (memory.scope, memory.scope_ref, memory.subject_type) == (Scope.CHANNEL, "C-general", SubjectType.WORKSPACE)
