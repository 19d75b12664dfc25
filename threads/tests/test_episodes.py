"""Episodes (issue 16): a thread's user and assistant events become recallable transcript lines,
split at sentences, stripped of echoed memory blocks, bounded per place, switchable, erased and
exported with their people, outside the agent's fact cap, and rendered only when recalled."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.organisation_switches import organisation_set_thread_episodes
from memories.errors import LimitReached
from memories.models import Bucket, Memory, MemoryAudit, Scope, SourceKind, SubjectType
from memories.places import place_for_turn
from memories.recall import contextual
from memories.recall.candidates import RecallRequest
from memories.recall.query import _execute
from memories.scopes import Place
from memories.subjects import subject_erase, subject_export
from memories.turns.writes import RememberRequest, memory_remember_in_place
from threads.consolidation import thread_consolidate
from threads.episodes import EPISODE_MAX_CHARS, split_text, strip_memory_blocks
from threads.models import Thread, ThreadEvent

pytestmark = pytest.mark.django_db

LONG = " ".join(
    f"Sentence number {n} tells a little more about the long trip we took across the northern coast." for n in range(14)
)


def episodes():
    return Memory.objects.filter(source_kind=SourceKind.EPISODE).order_by("created_at", "source_ref", "body")


def live_episodes():
    return episodes().filter(redacted_at__isnull=True)


# --- Pure parts ----------------------------------------------------------------------


def test_a_long_text_is_split_between_sentences_within_the_clamp():
    parts = split_text(LONG, 480)
    assert len(parts) > 1
    assert all(len(part) <= 480 for part in parts)
    assert all(part.endswith("coast.") for part in parts)  # each cut falls after a sentence
    assert " ".join(parts) == LONG  # nothing lost or reordered
    assert split_text("Short enough.", 480) == ["Short enough."]


def test_a_sentence_longer_than_the_clamp_is_cut_between_words():
    words = " ".join(["word"] * 300)  # one 1,499-character "sentence"
    parts = split_text(words, 480)
    assert all(len(part) <= 480 for part in parts) and " ".join(parts) == words


def test_a_rendered_memory_block_is_stripped_and_the_rest_kept():
    echoed = (
        "Thanks! Here is what I know:\n<memory>\nFacts remembered from earlier turns.\n"
        "- [person mona · inferred by an agent] mona's timezone is CET\n</memory>\nSee you tomorrow."
    )
    assert strip_memory_blocks(echoed) == "Thanks! Here is what I know:\nSee you tomorrow."
    assert strip_memory_blocks("<memory>\nonly the block, cut off before its end") == ""
    assert strip_memory_blocks("no block here") == "no block here"


# --- Consolidation -----------------------------------------------------------------


def test_user_and_assistant_events_become_episodes_with_their_sources(episodes_on, post_events, dm_with, member, agent):
    thread = post_events(
        "T-1",
        [("mona", "I went hiking on Sunday."), ("helper", "That sounds lovely.", "assistant"), ("tool", "{}", "tool")],
        place=dm_with,
    )
    result = thread_consolidate(thread_id=thread.pk)
    assert len(result.episodes) == 2  # not the tool's event
    mona, helper = (Memory.objects.get(pk=pk) for pk in result.episodes)
    events = {event.sequence: event for event in ThreadEvent.objects.filter(thread=thread)}
    assert mona.body == "mona: I went hiking on Sunday." and helper.body == "helper: That sounds lovely."
    for memory, event in ((mona, events[1]), (helper, events[2])):
        assert (memory.bucket, memory.tier, memory.source_kind) == (Bucket.LEARNED, "log", SourceKind.EPISODE)
        assert memory.source_event_id == event.pk and memory.source_ref == event.external_id
        assert memory.occurred_at == event.occurred_at and memory.agent_id == agent.pk
        assert memory.expires_at > timezone.now() + timedelta(days=30)  # the ordinary expiry
        # A DM with one person: their scope; the subject is the author, else what the place implies.
        assert (memory.scope, memory.scope_ref) == (Scope.PERSON, str(member.pk))
        assert (memory.subject_type, memory.subject_id) == (SubjectType.USER, str(member.pk))
        # Embedded in the run itself, with the worker's audit row.
        assert memory.embedding is not None
        assert MemoryAudit.objects.filter(memory=memory, action="embed").count() == 1
    assert not result.written  # nothing here is a fact


def test_an_event_without_its_own_id_is_referred_to_by_its_sequence(episodes_on, org, agent, dm_with):
    from threads.ingest import thread_events_ingest

    thread, _ = thread_events_ingest(
        organisation=org,
        agent=agent,
        thread_id="T-noid",
        events=[{"role": "user", "author": "mona", "text": "Hi", "time": timezone.now(), "place": dm_with}],
    )
    thread_consolidate(thread_id=thread.pk)
    assert episodes().get().source_ref == "T-noid#1"


def test_an_event_longer_than_the_clamp_becomes_several_episodes_of_one_event(
    episodes_on, post_events, private_channel
):
    thread = post_events("T-long", [("mona", LONG)], place=private_channel)
    thread_consolidate(thread_id=thread.pk)
    parts = list(episodes())
    assert len(parts) >= 3
    assert {part.source_event_id for part in parts} == {ThreadEvent.objects.get().pk}
    assert all(len(part.body) <= EPISODE_MAX_CHARS and part.body.startswith("mona: ") for part in parts)
    # In a group channel: the channel's, about its author.
    assert {(p.scope, p.scope_ref, p.subject_type) for p in parts} == {(Scope.CHANNEL, "C-private", SubjectType.USER)}


def test_an_echoed_memory_block_is_neither_kept_nor_learned(episodes_on, post_events, dm_with):
    block = "<memory>\nFacts remembered from earlier turns.\nMy timezone is PST.\n</memory>"
    thread = post_events("T-echo", [("mona", f"{block}\nCall me Mo."), ("mona", block)], place=dm_with)
    result = thread_consolidate(thread_id=thread.pk)
    assert [m.body for m in live_episodes()] == ["mona: Call me Mo."]  # the second event was only the echo
    learned = Memory.objects.filter(source_kind=SourceKind.THREAD_EVENT).values_list("body", flat=True)
    assert list(learned) == ["mona wants to be called Mo"]
    assert len(result.written) == 1
    # Positive control: the same sentence outside a block is learned.
    again = post_events("T-plain", [("mona", "My timezone is PST.")], place=dm_with)
    thread_consolidate(thread_id=again.pk)
    assert Memory.objects.filter(body="mona's timezone is PST").exists()


def test_a_thread_or_an_organisation_can_turn_episodes_off(
    episodes_on, agent_api, post_events, dm_with, org, owner, settings
):
    off = {"id": "e-1", "role": "user", "author": "mona", "text": "Call me Mo", "time": "2026-11-30T09:00:00Z"}
    response = agent_api.post(
        "/api/v1/threads/T-off/events", {"events": [{**off, "place": dm_with}], "episodes": False}, format="json"
    )
    assert response.status_code == 201, response.json()
    thread = Thread.objects.get(external_id="T-off")
    assert thread.episodes is False  # kept on the thread's record, not per request
    result = thread_consolidate(thread_id=thread.pk)
    assert result.episodes == [] and len(result.written) == 1  # facts only
    status = agent_api.get("/api/v1/threads/T-off").json()["episodes"]
    assert status["enabled"] is False and "off for this thread" in status["notice"]
    later = post_events("T-off", [("mona", "Still here")], place=dm_with)  # a later call that does not say
    assert thread_consolidate(thread_id=later.pk).episodes == []

    # The organisation's record, read by consolidation as it runs (not a setting): an owner turns it off.
    organisation_set_thread_episodes(organisation=org, keep=False, actor=owner)
    other = post_events("T-org", [("mona", "Hello")], place=dm_with)
    assert thread_consolidate(thread_id=other.pk).episodes == []
    assert "off for this organisation" in agent_api.get("/api/v1/threads/T-org").json()["episodes"]["notice"]
    assert Thread.objects.get(pk=other.pk).episodes is True  # the thread's own switch is untouched

    organisation_set_thread_episodes(organisation=org, keep=True, actor=owner)  # positive control: on again
    kept = post_events("T-on", [("mona", "Hello")], place=dm_with)
    assert len(thread_consolidate(thread_id=kept.pk).episodes) == 1
    assert agent_api.get("/api/v1/threads/T-on").json()["episodes"] == {
        "enabled": True,
        "kept": 1,
        "bound_per_place": settings.THREAD_EPISODES_PER_PLACE,
        "expired_by_bound": 0,
        "notice": "",
    }


def test_callers_cannot_write_the_episode_source_kind(agent_api, dm_with):
    response = agent_api.post(
        "/api/v1/memories", {"body": "mona: hi", "place": dm_with, "source_kind": "episode"}, format="json"
    )
    assert response.status_code == 400
    assert "source_kind" in str(response.json()) and "consolidation" in str(response.json())
    control = agent_api.post(
        "/api/v1/memories", {"body": "mona: hi", "place": dm_with, "source_kind": "message"}, format="json"
    )
    assert control.status_code == 201, control.json()


def test_episodes_do_not_count_toward_the_agents_fact_cap(episodes_on, post_events, dm_with, org, agent, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 2
    thread = post_events("T-cap", [("mona", f"Line {n}.") for n in range(5)], place=dm_with)
    assert len(thread_consolidate(thread_id=thread.pk).episodes) == 5
    resolved = place_for_turn(organisation=org, channel="D-mona", kind="dm", people=["mona"], agent=agent)
    for n in range(2):
        memory_remember_in_place(RememberRequest(body=f"fact {n}"), organisation=org, resolved=resolved, writer=agent)
    with pytest.raises(LimitReached):  # positive control: facts do count
        memory_remember_in_place(RememberRequest(body="fact 3"), organisation=org, resolved=resolved, writer=agent)


def test_past_the_bound_per_place_the_oldest_episodes_expire_with_receipts(
    episodes_on, agent_api, post_events, private_channel, dm_with, settings
):
    settings.THREAD_EPISODES_PER_PLACE = 3
    thread = post_events("T-bound", [("mona", f"Line {n}.") for n in range(5)], place=private_channel)
    other = post_events("T-dm", [("mona", "In the DM.")], place=dm_with)  # another place: not counted there
    thread_consolidate(thread_id=thread.pk)
    thread_consolidate(thread_id=other.pk)
    assert sorted(m.body for m in live_episodes().filter(scope=Scope.CHANNEL)) == [
        "mona: Line 2.",
        "mona: Line 3.",
        "mona: Line 4.",
    ]
    gone = list(episodes().filter(redacted_at__isnull=False))
    assert len(gone) == 2 and all(m.body == "" and m.embedding is None for m in gone)
    assert all("more than 3 episodes" in m.redaction_reason for m in gone)
    assert MemoryAudit.objects.filter(memory__in=gone, action="purge").count() == 2
    assert live_episodes().filter(scope=Scope.PERSON).count() == 1
    status = agent_api.get("/api/v1/threads/T-bound").json()["episodes"]
    assert status["expired_by_bound"] == 2 and status["kept"] == 3 and "at most 3 episodes" in status["notice"]


def test_erasure_and_export_reach_episodes(episodes_on, post_events, dm_with, private_channel, member, org):
    thread = post_events(
        "T-er",
        [("mona", "My sister lives in Porto."), ("helper", "Porto is lovely, mona.", "assistant")],
        place=dm_with,
    )
    group = post_events("T-gr", [("mona", "Lunch at noon?"), ("arthur", "Sure.")], place=private_channel)
    thread_consolidate(thread_id=thread.pk)
    thread_consolidate(thread_id=group.pk)
    exported = {m.body for m in subject_export(organisation=org, subject_type="user", subject_id=str(member.pk))}
    assert {"mona: My sister lives in Porto.", "helper: Porto is lovely, mona.", "mona: Lunch at noon?"} <= exported
    subject_erase(organisation=org, subject_type="user", subject_id=str(member.pk), reason="asked")
    # Hers, and the agent's replies in her DM; someone else's words in the group stay.
    assert [m.body for m in live_episodes()] == ["arthur: Sure."]
    assert all(m.redaction_reason for m in episodes().filter(redacted_at__isnull=False))


def test_erasing_an_event_erases_every_episode_of_it(episodes_on, post_events, private_channel, org):
    from threads.erasure import thread_subject_erase

    thread = post_events("T-split", [("arthur", LONG), ("arthur", "Keep this.")], place=private_channel)
    thread_consolidate(thread_id=thread.pk)
    part = episodes().filter(source_event__sequence=1).first()
    thread_subject_erase(
        organisation=org, subject_type="workspace", subject_id="", memory_ids=[str(part.pk)], reason="wrong"
    )
    assert not live_episodes().filter(source_event__sequence=1).exists()
    assert ThreadEvent.objects.get(thread=thread, sequence=1).erased_at is not None
    assert [m.body for m in live_episodes()] == ["arthur: Keep this."]  # control


# --- Recall and render ---------------------------------------------------------------


def _links(org, agent, place: Place, question: str) -> dict[tuple[str, str], int]:
    """Each (anchor, neighbour) pair the contextual statement walked to, with its step."""
    plan = contextual.contextual_plan(
        RecallRequest(
            organisation_id=org.pk,
            place=place,
            agent_id=agent.pk,
            limit=10,
            lists=("lexical",),
            question=question,
            now=timezone.now(),
            pool=contextual.CANDIDATES,
        )
    )
    rows, _, _ = _execute(plan)
    steps = contextual._as_json(next(row["bm25"] for row in rows if row["bm25"] is not None))[4]
    return {(str(anchor), str(other)): step for anchor, other, step in steps}


def test_a_threads_episodes_are_neighbours_whatever_order_and_time_they_arrive(
    episodes_on, post_events, private_channel, org, agent
):
    first = post_events("T-ctx", [("mona", "We adopted a puppy named Biscuit.")], place=private_channel)
    thread_consolidate(thread_id=first.pk)
    # The next turn arrives (and is consolidated) two days later.
    Memory.objects.filter(source_kind=SourceKind.EPISODE).update(created_at=timezone.now() - timedelta(days=2))
    post_events("T-ctx", [("arthur", "Congratulations, what breed?")], place=private_channel)
    thread_consolidate(thread_id=first.pk)
    # A fact written two days ago in the same place, by the same agent, that is not an episode.
    resolved = place_for_turn(
        organisation=org, channel="C-private", kind="private", people=["mona", "max"], agent=agent
    )
    other, _ = memory_remember_in_place(
        RememberRequest(body="Biscuit food is in stock", subject_type="workspace"),
        organisation=org,
        resolved=resolved,
        writer=agent,
    )
    Memory.objects.filter(pk=other.pk).update(created_at=timezone.now() - timedelta(days=2))
    puppy = Memory.objects.get(body__contains="Biscuit", source_kind=SourceKind.EPISODE)
    reply = Memory.objects.get(body__contains="breed")
    place = Place(channel="C-private", kind="private", people=tuple(resolved.place.people))
    links = _links(org, agent, place, "Biscuit")
    assert (str(puppy.pk), str(reply.pk)) in links
    # Control: the fact written at the puppy's time, not an episode of the thread, is no neighbour by order.
    assert (str(other.pk), str(reply.pk)) not in links


@pytest.fixture
def render_turn(agent_api, private_channel):
    counter = {"n": 0}

    def render(question: str = ""):
        counter["n"] += 1
        response = agent_api.post(
            "/api/v1/render",
            {"place": private_channel, "turn_id": f"turn-{counter['n']}", "question": question},
            format="json",
        )
        assert response.status_code in (200, 201), response.json()
        return response.json()["text"]

    return render


def test_episodes_render_only_when_the_question_recalls_them_and_fade_after_14_days(
    episodes_on, post_events, private_channel, render_turn, org, agent, settings
):
    settings.EMBEDDER = "none"
    thread = post_events("T-r", [("mona", "The boat is called Seagull.")], place=private_channel)
    thread_consolidate(thread_id=thread.pk)
    resolved = place_for_turn(
        organisation=org, channel="C-private", kind="private", people=["mona", "max"], agent=agent
    )
    memory_remember_in_place(
        RememberRequest(body="The office closes at 6", subject_type="workspace"),
        organisation=org,
        resolved=resolved,
        writer=agent,
    )
    plain = render_turn()
    assert "The office closes at 6" in plain and "Seagull" not in plain  # never filler
    asked = render_turn("What is the boat called? Seagull?")
    assert "mona: The boat is called Seagull." in asked
    Memory.objects.filter(source_kind=SourceKind.EPISODE).update(created_at=timezone.now() - timedelta(days=15))
    assert "Seagull" not in render_turn("What is the boat called? Seagull?")  # faded like a note


def test_an_author_named_by_handle_is_the_person_record_with_their_display_name(
    episodes_on, org, post_events, private_channel
):
    from accounts.people import person_upsert

    person, _ = person_upsert(organisation=org, handle="U123", display_name="Mona Lisa")
    thread = post_events("T-handle", [("U123", "Hello from the directory.")], place=private_channel)
    thread_consolidate(thread_id=thread.pk)
    episode = episodes().get()
    assert episode.body == "Mona Lisa: Hello from the directory."
    assert (episode.subject_type, episode.subject_id) == (SubjectType.USER, str(person.user_id))
