"""Consolidation: thread events become learned memories with their sources, in the scope the
place allows, once (the watermark), without repeating or keeping contradicted memories."""

from __future__ import annotations

import pytest

from memories.embeddings.writes import memory_embed
from memories.models import Author, Bucket, Memory, Scope, SourceKind, SubjectType
from memories.tests.remembered import remembered
from threads.consolidation import thread_consolidate
from threads.extractors.base import EventView
from threads.extractors.rules import RulesExtractor
from threads.models import Learning, Thread

pytestmark = pytest.mark.django_db


def live_learned():
    return Memory.objects.filter(bucket=Bucket.LEARNED, superseded_by__isnull=True, redacted_at__isnull=True)


def test_learned_memories_carry_their_sources_author_model_and_the_learned_bucket(post_events, dm_with, member, agent):
    thread = post_events("T-1", [("mona", "Hello there"), ("mona", "Call me Mo. My timezone is CET.")], place=dm_with)
    result = thread_consolidate(thread_id=thread.pk)
    assert result.events == 2 and len(result.written) == 2
    rows = {m.body: m for m in live_learned()}
    assert set(rows) == {"mona wants to be called Mo", "mona's timezone is CET"}
    for memory in rows.values():
        assert memory.author == Author.MODEL and memory.bucket == Bucket.LEARNED
        assert memory.agent_id == agent.pk
        assert memory.source_kind == SourceKind.THREAD_EVENT
        assert memory.source_ref == f"thread:{thread.pk}#2"
        assert memory.source_label == "thread T-1"
        assert (memory.subject_type, memory.subject_id) == (SubjectType.USER, str(member.pk))
        # A DM with one person: the fact is that person's.
        assert (memory.scope, memory.scope_ref) == (Scope.PERSON, str(member.pk))
        assert [e.sequence for e in memory.learning.events.all()] == [2]
        assert memory.occurred_at == memory.learning.events.get().occurred_at


def test_the_scope_follows_the_place_by_the_scope_rules(post_events, private_channel, public_channel, member):
    in_private = post_events(
        "T-p", [("mona", "My timezone is CET"), ("mona", "Remember that the VPN is down")], place=private_channel
    )
    in_public = post_events("T-g", [("mona", "Remember that the office closes at 6")], place=public_channel)
    thread_consolidate(thread_id=in_private.pk)
    thread_consolidate(thread_id=in_public.pk)
    scopes = {m.body: (m.scope, m.scope_ref, m.subject_type) for m in live_learned()}
    assert scopes == {
        # A person's fact said in a group channel stays in that channel.
        "mona's timezone is CET": (Scope.CHANNEL, "C-private", SubjectType.USER),
        # Only a public channel may write a workspace fact; a private one keeps it.
        "The VPN is down": (Scope.CHANNEL, "C-private", SubjectType.WORKSPACE),
        # Consolidation never writes the workspace scope: a public channel keeps it as its own.
        "The office closes at 6": (Scope.CHANNEL, "C-general", SubjectType.WORKSPACE),
    }


def test_consolidating_the_same_events_again_writes_nothing(post_events, dm_with):
    thread = post_events("T-1", [("mona", "Call me Mo")], place=dm_with)
    first = thread_consolidate(thread_id=thread.pk)
    again = thread_consolidate(thread_id=thread.pk)
    assert len(first.written) == 1 and again.events == 0 and again.written == []
    thread.refresh_from_db()
    assert thread.consolidated_through == thread.last_sequence == 1
    post_events("T-1", [("mona", "My timezone is CET")], place=dm_with)
    later = thread_consolidate(thread_id=thread.pk)
    assert later.events == 1 and len(later.written) == 1
    assert Memory.objects.count() == 2


class _RacingExtractor(RulesExtractor):
    """Runs a second consolidation of the same thread while the first is still extracting."""

    def __init__(self, thread_id: int):
        self.thread_id = thread_id
        self.raced = False

    def extract(self, events, *, context=()):
        if not self.raced:
            self.raced = True
            thread_consolidate(thread_id=self.thread_id, extractor=RulesExtractor())
        return super().extract(events, context=context)


def test_a_run_that_finds_the_watermark_moved_writes_nothing(post_events, dm_with):
    thread = post_events("T-1", [("mona", "Call me Mo")], place=dm_with)
    thread_consolidate(thread_id=thread.pk, extractor=_RacingExtractor(thread.pk))
    assert Memory.objects.count() == 1 and Learning.objects.count() == 1


def test_a_repeated_statement_is_dropped(post_events, dm_with):
    thread = post_events("T-1", [("mona", "Remember that I'm allergic to peanuts.")], place=dm_with)
    thread_consolidate(thread_id=thread.pk)
    post_events("T-1", [("mona", "remember that I am allergic to peanuts")], place=dm_with)
    again = thread_consolidate(thread_id=thread.pk)
    assert again.duplicates == 1 and again.written == []
    assert live_learned().count() == 1


def test_a_paraphrase_close_in_meaning_is_dropped_by_cosine(post_events, dm_with, settings):
    thread = post_events("T-1", [("mona", "Remember that the quarterly report is due on Friday")], place=dm_with)
    thread_consolidate(thread_id=thread.pk)
    memory_embed(ids=[str(m.pk) for m in live_learned()])
    post_events("T-1", [("mona", "Remember that the quarterly report is due Friday")], place=dm_with)
    again = thread_consolidate(thread_id=thread.pk)
    assert again.duplicates == 1 and again.written == []
    # A different fact of the same shape is kept.
    post_events("T-1", [("mona", "Remember that the annual budget is due in March")], place=dm_with)
    assert len(thread_consolidate(thread_id=thread.pk).written) == 1


def test_the_same_fact_in_another_scope_is_not_a_repeat(post_events, dm_with, private_channel):
    post_events("T-dm", [("mona", "My timezone is CET")], place=dm_with)
    post_events("T-ch", [("mona", "My timezone is CET")], place=private_channel)
    for thread in Thread.objects.all():
        thread_consolidate(thread_id=thread.pk)
    assert live_learned().count() == 2


def test_a_new_value_for_the_same_key_supersedes_the_old(post_events, dm_with):
    thread = post_events("T-1", [("mona", "My timezone is CET")], place=dm_with)
    thread_consolidate(thread_id=thread.pk)
    post_events("T-1", [("mona", "My timezone is PST")], place=dm_with)
    result = thread_consolidate(thread_id=thread.pk)
    assert len(result.superseded) == 1 and result.written == []
    old = Memory.objects.get(body="mona's timezone is CET")
    new = Memory.objects.get(body="mona's timezone is PST")
    assert old.superseded_by_id == new.pk and old.valid_until is not None
    assert (new.bucket, new.author, new.scope, new.scope_ref) == (
        Bucket.LEARNED,
        Author.MODEL,
        old.scope,
        old.scope_ref,
    )
    assert new.source_ref == f"thread:{thread.pk}#2" and new.learning.key == "my:timezone"


def test_actually_corrects_the_newest_fact_of_its_kind(post_events, dm_with):
    thread = post_events("T-1", [("mona", "I prefer tea"), ("mona", "Actually, I prefer coffee")], place=dm_with)
    result = thread_consolidate(thread_id=thread.pk)
    assert len(result.written) == 1 and len(result.superseded) == 1
    assert [m.body for m in live_learned()] == ["mona prefers coffee"]
    assert Memory.objects.get(body="mona prefers tea").superseded_by.body == "mona prefers coffee"


def test_a_preference_without_a_correction_sits_beside_the_other(post_events, dm_with):
    thread = post_events("T-1", [("mona", "I prefer tea in the morning"), ("mona", "I prefer email")], place=dm_with)
    thread_consolidate(thread_id=thread.pk)
    assert live_learned().count() == 2


def test_not_anymore_supersedes_the_fact_it_denies(post_events, dm_with):
    thread = post_events("T-1", [("mona", "Remember that I'm vegetarian")], place=dm_with)
    thread_consolidate(thread_id=thread.pk)
    post_events("T-1", [("mona", "I'm not vegetarian anymore")], place=dm_with)
    thread_consolidate(thread_id=thread.pk)
    assert [m.body for m in live_learned()] == ["mona is no longer vegetarian"]
    assert Memory.objects.get(body="mona is vegetarian").superseded_by is not None


def test_a_retraction_with_nothing_to_retract_is_kept_as_a_fact(post_events, dm_with):
    thread = post_events("T-1", [("mona", "I don't drink coffee anymore")], place=dm_with)
    thread_consolidate(thread_id=thread.pk)
    assert [m.body for m in live_learned()] == ["mona no longer drinks coffee"]


def test_a_persons_own_note_is_never_superseded_by_a_learned_one(post_events, dm_with, org, member):
    note = remembered(
        organisation=org,
        bucket=Bucket.USER,
        author=Author.PERSON,
        body="mona's timezone is CET",
        source_kind=SourceKind.PERSON,
        owner=member,
        written_by=member,
        subject_type=SubjectType.USER,
        subject_id=str(member.pk),
        scope=Scope.PERSON,
        scope_ref=str(member.pk),
    )
    thread = post_events("T-1", [("mona", "My timezone is PST")], place=dm_with)
    thread_consolidate(thread_id=thread.pk)
    note.refresh_from_db()
    assert note.superseded_by_id is None
    # Issue 16: the contradicting inference waits beside it as a pending conflict (threads/tests/test_conflicts.py).
    assert not live_learned().exists()
    pending = Memory.objects.get(body="mona's timezone is PST")
    assert pending.superseded_by_id == note.pk and pending.learning.conflict == "pending"


def test_questions_and_the_agents_words_teach_nothing(post_events, dm_with):
    thread = post_events(
        "T-1",
        [("mona", "What is my timezone?"), ("helper", "Your timezone is CET. Call me Helper.", "assistant")],
        place=dm_with,
    )
    result = thread_consolidate(thread_id=thread.pk)
    assert result.events == 2 and result.written == [] and Memory.objects.count() == 0
    thread.refresh_from_db()
    assert thread.consolidated_through == 2


def test_an_agent_at_its_limit_skips_the_candidate_and_the_watermark_still_moves(post_events, dm_with, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 1
    thread = post_events("T-1", [("mona", "Call me Mo. My timezone is CET.")], place=dm_with)
    result = thread_consolidate(thread_id=thread.pk)
    assert len(result.written) == 1 and result.skipped == 1
    thread.refresh_from_db()
    assert thread.consolidated_through == 1


def test_extractors_see_the_author_as_an_account_only_when_they_are_one(post_events, dm_with, member):
    seen: list[EventView] = []

    class Spy(RulesExtractor):
        def extract(self, events, *, context=()):
            seen.extend(events)
            return []

    thread = post_events("T-1", [("mona", "hi"), ("stranger", "hello")], place=dm_with)
    thread_consolidate(thread_id=thread.pk, extractor=Spy())
    assert [(e.author, e.author_id) for e in seen] == [("mona", str(member.pk)), ("stranger", None)]


def test_a_near_identical_sentence_with_another_value_is_not_a_repeat(post_events, dm_with):
    # all-MiniLM-L6-v2 scores these two 0.99; the numbers-names-contrasts check keeps both.
    thread = post_events("T-1", [("mona", "Remember that the team meets after 10am")], place=dm_with)
    thread_consolidate(thread_id=thread.pk)
    memory_embed(ids=[str(m.pk) for m in live_learned()])
    post_events(
        "T-1",
        [("mona", "Remember that the team meets before 10am"), ("mona", "Remember that the team meets after 11am")],
        place=dm_with,
    )
    assert len(thread_consolidate(thread_id=thread.pk).written) == 2


def test_value_signatures_hold_numbers_names_and_contrasts():
    from threads.extractors.base import value_signature

    assert value_signature("The team meets after 10 am") == value_signature("the team meets after 10am")
    assert value_signature("The team meets after 10am") != value_signature("The team meets before 10am")
    assert value_signature("Priya Shah is mona's manager") == value_signature("mona's manager is Priya Shah")
    assert value_signature("The VPN needs a token") == value_signature("A token is needed for the VPN")
    assert value_signature("mona is vegetarian") != value_signature("mona is no longer vegetarian")


def _place_reads(post_events, thread_id: str, lines, place) -> tuple[int, int]:
    """(learned memories written, queries reading a place's people) for one consolidation of these lines."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    thread = post_events(thread_id, lines, place=place)
    with CaptureQueriesContext(connection) as queries:
        written = len(thread_consolidate(thread_id=thread.pk).written)
    # The place's labels: its people's memberships, by id (the remember path's own lookups are by name).
    people = '"accounts_membership"."user_id" IN ('
    return written, sum(people in query["sql"] for query in queries.captured_queries)


def test_a_batchs_place_is_read_once_however_many_facts_it_teaches(post_events, dm_with):
    few = _place_reads(post_events, "T-few", [("mona", "Call me Mo.")], dm_with)
    many = _place_reads(
        post_events,
        "T-many",
        [("mona", "My timezone is CET."), ("mona", "I'm allergic to peanuts."), ("mona", "I prefer tea.")],
        dm_with,
    )
    assert few[0] == 1 and many[0] == 3  # the positive control: three facts were kept, not one
    assert many[1] == few[1] == 1
