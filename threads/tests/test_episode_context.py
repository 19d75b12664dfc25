"""Episodes keep their context without copying it: each part of a long message knows its number, how many parts
its message has and the message it is linked to (an answer's question, a question's answer, linked late when the
answer comes later); the link is never returned as a part's text nor rendered, erasure clears it with its events,
the walk reaches a part's neighbours in its message and the messages around it, and the caps count every part."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from memories.models import Memory, SourceKind
from memories.places import place_for_turn
from memories.scopes import Place
from memories.subjects import subject_erase
from memories.turns.render import FENCE_CLOSE, FENCE_OPEN
from threads.consolidation import thread_consolidate
from threads.erasure import thread_subject_erase
from threads.models import EpisodePart, ThreadEvent
from threads.tests.conftest import START
from threads.tests.test_episodes import _links
from threads.tests.test_long_events import long_text

pytestmark = pytest.mark.django_db

QUESTION = "Which marathon plan should I follow, given my Zorbanian knee?"  # "Zorbanian": the question's alone
MARKER = "Zorbanian"


@pytest.fixture
def post(post_events, private_channel):
    """post(thread, [(role, author, text), ...]) as one call, in the private channel."""

    def send(thread_id: str, lines):
        return post_events(thread_id, [(author, text, role) for role, author, text in lines], place=private_channel)

    return send


def parts_of(event: ThreadEvent) -> list[EpisodePart]:
    return list(EpisodePart.objects.filter(memory__source_event=event).select_related("memory").order_by("part"))


def event_said(text_start: str) -> ThreadEvent:
    return ThreadEvent.objects.get(text__startswith=text_start)


def without_speaker(body: str) -> str:
    return body.split(": ", 1)[1]


def test_a_100000_character_answer_is_parts_that_each_know_their_number_count_and_question(episodes_on, post):
    answer = long_text(100_000)
    thread = post("T-ctx", [("user", "mona", QUESTION), ("assistant", "helper", answer)])
    thread_consolidate(thread_id=thread.pk)
    parts = parts_of(event_said("The plan"))
    question = parts_of(event_said("Which"))
    assert len(parts) >= 200 and len(question) == 1
    assert [part.part for part in parts] == list(range(1, len(parts) + 1))
    assert {part.parts for part in parts} == {len(parts)}
    assert {part.context_id for part in parts} == {question[0].memory_id}  # every part knows its question
    assert question[0].context_id == parts[0].memory_id  # and the question its answer's first part
    # In part order, the parts are the message: split, never reordered or cut.
    assert " ".join(without_speaker(part.memory.body) for part in parts).split() == answer.split()
    # Each vector is of the part's own body: the question is not in it (a part's body is all that was embedded).
    assert not any(MARKER in part.memory.body for part in parts)


def test_a_message_posted_as_several_events_is_one_message_numbered_across_them(episodes_on, post_events, dm_with):
    post_events("T-split", [("mona", QUESTION)], place=dm_with)
    parts = [("helper", f"Part {n} says {n}. " * 40, "assistant") for n in (1, 2)]
    thread = post_events("T-split", parts, place=dm_with)
    # The conftest gives each event its own id and minute: make them one message's parts, as a caller would.
    for n, event in enumerate(ThreadEvent.objects.filter(role="assistant").order_by("sequence"), start=1):
        ThreadEvent.objects.filter(pk=event.pk).update(external_id=f"msg-7.{n}", occurred_at=START)
    thread_consolidate(thread_id=thread.pk)
    parts = list(EpisodePart.objects.filter(memory__source_event__role="assistant").order_by("part"))
    first, second = ThreadEvent.objects.filter(role="assistant").order_by("sequence")
    assert {p.message for p in parts} == {first.sequence}
    assert [p.part for p in parts] == list(range(1, len(parts) + 1)) and {p.parts for p in parts} == {len(parts)}
    by_event = Counter(p.memory.source_event_id for p in parts)
    assert by_event[first.pk] >= 1 and by_event[second.pk] >= 1  # numbered on across both events


def test_a_question_consolidated_before_its_answer_is_linked_when_the_answer_arrives(episodes_on, post):
    thread = post("T-late", [("user", "mona", QUESTION)])
    thread_consolidate(thread_id=thread.pk)
    (question,) = parts_of(event_said("Which"))
    assert question.context_id is None  # no answer yet
    post("T-late", [("assistant", "helper", "Follow the sixteen week plan. " * 30)])
    thread_consolidate(thread_id=thread.pk)
    answer = parts_of(event_said("Follow"))
    question.refresh_from_db()
    assert question.context_id == answer[0].memory_id
    assert {part.context_id for part in answer} == {question.memory_id}
    # A second answer to the same question keeps the first as the question's link.
    post("T-late", [("assistant", "helper", "Or rest for a week first.")])
    thread_consolidate(thread_id=thread.pk)
    question.refresh_from_db()
    assert question.context_id == answer[0].memory_id
    assert parts_of(event_said("Or rest"))[0].context_id == question.memory_id


def test_the_context_is_never_returned_as_a_parts_text_nor_rendered_with_it(
    episodes_on, post, agent_api, private_channel, settings
):
    settings.EMBEDDER = "none"
    # Asked by someone who is no person of the organisation, so the question is the channel's to recall.
    thread = post("T-show", [("user", "arthur", QUESTION), ("assistant", "helper", long_text(20_000))])
    thread_consolidate(thread_id=thread.pk)
    answer_ids = {str(part.memory_id) for part in parts_of(event_said("The plan"))}
    asked = {"place": private_channel, "question": "Which plan moves the long run to Sunday? Zorbanian knee"}
    # Contextual: the walk takes the question into the pool as every part's neighbour, and still no part carries it.
    recalled = agent_api.post("/api/v1/recall", {**asked, "limit": 20, "mode": "contextual"}, format="json")
    recalled = recalled.json()["results"]
    answers = [row for row in recalled if row["id"] in answer_ids]
    assert answers  # positive control: parts of the answer were recalled
    assert not any(MARKER in json.dumps(row) for row in answers)
    # Control: the question's own episode is recalled with its words when asked for them.
    own = agent_api.post(
        "/api/v1/recall", {**asked, "question": "Zorbanian knee", "mode": "lexical"}, format="json"
    ).json()["results"]
    assert any(MARKER in json.dumps(row) for row in own if row["id"] not in answer_ids)
    rendered = agent_api.post("/api/v1/render", {**asked, "turn_id": "turn-1"}, format="json").json()["text"]
    lines = [line for line in rendered.splitlines() if line.startswith("- [")]
    assert any("long run to Sunday" in line for line in lines)  # control: the answer's parts are rendered
    assert all(MARKER not in line for line in lines if "long run to Sunday" in line)


def test_erasing_the_question_clears_every_link_to_it_and_erasing_the_answer_every_part(episodes_on, post, org, member):
    thread = post("T-erase", [("user", "mona", QUESTION), ("assistant", "helper", long_text(5_000))])
    thread_consolidate(thread_id=thread.pk)
    answer_event, question_event = event_said("The plan"), event_said("Which")
    (question,) = parts_of(question_event)
    assert {part.context_id for part in parts_of(answer_event)} == {question.memory_id}  # positive control
    subject_erase(organisation=org, subject_type="user", subject_id=str(member.pk), reason="asked")
    # The question's words went, its part record and every link to it too; the answer's parts are their own
    # event's, so they stay, linked to nothing.
    assert not EpisodePart.objects.filter(memory__source_event=question_event).exists()
    answer = parts_of(answer_event)
    assert len(answer) > 5 and {part.context_id for part in answer} == {None}
    assert not any(part.memory.redacted_at for part in answer)
    thread_subject_erase(
        organisation=org, subject_type="workspace", subject_id="", memory_ids=[str(answer[3].memory_id)], reason="x"
    )
    assert not EpisodePart.objects.exists()
    erased = Memory.objects.filter(source_event=answer_event)
    assert erased.count() == len(answer) and not erased.filter(redacted_at__isnull=True).exists()


def test_the_walk_reaches_parts_within_two_and_the_messages_around(episodes_on, post, org, agent, private_channel):
    answer = " ".join(f"Waypoint number {n} is reached on foot through the quiet valley road." for n in range(80))
    thread = post(
        "T-walk",
        [
            ("user", "mona", "Earlier question about shoes?"),
            ("assistant", "helper", "Earlier answer about shoes."),
            ("user", "mona", QUESTION),
            ("assistant", "helper", answer),
            ("user", "mona", "Thanks, and the next step?"),
            ("assistant", "helper", "Rest on Monday."),
        ],
    )
    thread_consolidate(thread_id=thread.pk)
    parts = parts_of(event_said("Waypoint"))
    assert len(parts) >= 7
    anchor = parts[3]
    word = next(w for w in anchor.memory.body.split() if w.isdigit() and f" {w} " not in parts[2].memory.body)
    ids = {
        name: str(parts_of(event_said(start))[i].memory_id)
        for name, start, i in (
            ("question", "Which", -1),
            ("earlier", "Earlier answer", -1),
            ("thanks", "Thanks", 0),
            ("rest", "Rest", 0),
        )
    }
    resolved = place_for_turn(
        organisation=org,
        channel=private_channel["channel"],
        kind="private",
        people=private_channel["people"],
        agent=agent,
    )
    place = Place(channel="C-private", kind="private", people=tuple(resolved.place.people))
    links = _links(org, agent, place, f"Waypoint number {word}")
    walked = {other: step for (start, other), step in links.items() if start == str(anchor.memory_id)}
    expected = {str(parts[i].memory_id): i - 3 for i in (1, 2, 4, 5)}
    expected.update({ids["question"]: -1, ids["earlier"]: -2, ids["thanks"]: 1, ids["rest"]: 2})
    assert walked == expected
    # Control: the message's farther parts exist, and are not walked to from this part.
    assert str(parts[0].memory_id) not in walked and str(parts[-1].memory_id) not in walked


def test_the_caps_count_every_part(episodes_on, post, agent_api, private_channel, settings):
    settings.EMBEDDER = "none"
    settings.THREAD_EPISODES_PER_PLACE = 50
    thread = post("T-caps", [("user", "mona", QUESTION), ("assistant", "helper", long_text(100_000))])
    thread_consolidate(thread_id=thread.pk)
    answer = Memory.objects.filter(source_event=event_said("The plan"))
    assert answer.count() >= 200
    # The per-place bound counts each part: past 50, the oldest expire, keeping their receipts.
    live = Memory.objects.filter(source_kind=SourceKind.EPISODE, redacted_at__isnull=True)
    assert live.count() == 50 and answer.filter(redacted_at__isnull=True).count() == 50
    asked = {"place": private_channel, "question": "Which week moves the long run to Sunday?", "turn_id": "t-1"}
    rendered = agent_api.post("/api/v1/render", asked, format="json").json()["text"]
    lines = [line for line in rendered.splitlines() if line.startswith("- [")]
    caps = settings.MEMORY_RENDER_CAPS["channel"]
    # Each part is a fact of its own under the channel's count limit, clamp and fence: parts are never merged.
    assert 1 < len(lines) <= caps["profile_limit"] + caps["recent_limit"]
    assert all(len(line) <= caps["fact_clamp"] + 200 for line in lines)
    assert rendered.count(FENCE_OPEN) == 1 and rendered.count(FENCE_CLOSE) == 1
    inside = rendered.split(FENCE_OPEN, 1)[1].split(FENCE_CLOSE, 1)[0]
    assert all(line in inside for line in lines)
