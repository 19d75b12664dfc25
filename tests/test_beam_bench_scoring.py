"""The BEAM bench's loader and scoring (bench/beam.py), without a server: events, dates, hits and their sums."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import beam  # noqa: E402 - bench/ is not a package

PARAGRAPH = "Week {n}: move the long run to Sunday and add one rest day before it. " * 20 + "\n\n"


def write_chat(folder: Path, batches: list[dict], questions: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(batches))
    (folder / "probing_questions.json").write_text(json.dumps(questions))
    return folder


def message(number: int, content: str, anchor: str | None = None) -> dict:
    role = "user" if number % 2 == 0 else "assistant"
    return {"role": role, "id": number, "content": content, **({"time_anchor": anchor} if anchor else {})}


@pytest.fixture
def chat(tmp_path) -> beam.Chat:
    long = "".join(PARAGRAPH.format(n=n) for n in range(100))  # past the event limit
    assert len(long) > beam.EVENT_MAX_CHARS
    batches = [
        {"batch_number": 1, "turns": [[message(0, "Plan my sprint.", "March-15-2024"), message(1, long)]]},
        {"batch_number": 2, "turns": [[message(2, "Sprint one is done.", "April-05-2024"), message(3, "Well done.")]]},
        {"batch_number": 3, "turns": [[message(4, "And the next?"), message(5, "Sprint two.")]]},
    ]
    questions = {
        "abstention": [{"question": "Unanswerable?", "source_chat_ids": None}],
        "knowledge_update": [
            {"question": "Which sprint?", "source_chat_ids": "{'original_info': [0], 'updated_info': [2]}"}
        ],
        "event_ordering": [{"question": "In what order?", "source_chat_ids": [0, [2, 4]]}],
    }
    return beam.load_chat(write_chat(tmp_path / "7", batches, questions))


def test_the_bench_splits_at_the_limit_the_api_holds():
    assert beam.EVENT_MAX_CHARS == settings.THREAD_EVENT_MAX_CHARS


def test_a_message_over_the_limit_is_consecutive_events_sharing_its_id(chat):
    events = beam.chat_events(chat)
    parts = [event for event in events if event["id"].startswith("1.")]
    assert [event["id"] for event in parts] == [f"1.{n}" for n in range(1, len(parts) + 1)]
    assert len(parts) == 2
    assert all(len(event["text"]) <= beam.EVENT_MAX_CHARS for event in parts)
    assert "".join(event["text"] for event in parts) == chat.messages[1].content  # split, never cut
    assert parts[0]["text"].endswith("\n\n")  # between paragraphs
    assert {(e["role"], e["author"], e["time"], json.dumps(e["place"])) for e in parts} == {
        ("assistant", "assistant", "2024-03-15T00:00:00+00:00", json.dumps(chat.place))
    }
    # Control: a message within the limit is one event with the message's own id.
    assert [event["id"] for event in events] == ["0", "1.1", "1.2", "2", "3", "4", "5"]


def test_a_text_without_a_break_is_cut_hard_at_the_limit():
    assert [len(part) for part in beam.split_text("x" * 250, 100)] == [100, 100, 50]
    assert beam.split_text("short", 100) == ["short"]


def test_each_message_has_its_batchs_date_and_a_batch_without_one_keeps_the_last(chat):
    dates = [m.date for m in chat.messages]
    march, april = datetime(2024, 3, 15, tzinfo=UTC), datetime(2024, 4, 5, tzinfo=UTC)
    assert dates == [march, march, april, april, april, april]


def test_a_first_batch_without_a_date_is_refused_by_name():
    with pytest.raises(ValueError, match="batch 1 has no time_anchor"):
        beam.chat_messages([{"batch_number": 1, "turns": [[message(0, "Hi")]]}])


def test_sources_are_read_from_lists_dicts_nested_lists_and_literals(chat):
    sources = {q.ability: q.sources for q in chat.questions}
    assert sources == {
        "abstention": frozenset(),
        "knowledge_update": frozenset({0, 2}),
        "event_ordering": frozenset({0, 2, 4}),
    }


def test_requests_hold_at_most_the_events_and_bytes_allowed_in_order():
    events = [{"id": str(n), "text": "x" * 1000} for n in range(250)]
    batches = beam.request_batches(events, max_events=100, max_bytes=50_000)
    assert [event for batch in batches for event in batch] == events
    assert all(len(batch) <= 100 and len(json.dumps(batch)) <= 50_000 for batch in batches)
    assert len(beam.request_batches(events, max_events=100, max_bytes=10**9)) == 3


def test_a_result_comes_from_its_own_message_only():
    events = {1: "0", 2: "1.1", 3: "1.2", 4: "2", 5: "3"}
    assert beam.messages_of("1.2", events) == {1}  # an episode of a split message: the message
    assert beam.messages_of("2", events) == {2}
    assert beam.messages_of("thread:9#2,4", events) == {1, 2}  # a learned fact: its events' messages
    assert beam.messages_of("thread:9#3-5", events) == {1, 2, 3}
    assert beam.messages_of("warm-up", events) == set()


def test_hit_at_5_and_at_10_stop_at_their_rank():
    sources = frozenset({17})
    others = [{n} for n in range(100, 110)]
    at_rank = lambda rank: others[: rank - 1] + [{17}] + others[rank - 1 :]  # noqa: E731
    assert beam.hits(at_rank(5), sources) == (True, True)
    assert beam.hits(at_rank(6), sources) == (False, True)
    assert beam.hits(at_rank(10), sources) == (False, True)
    assert beam.hits(at_rank(11), sources) == (False, False)
    # A neighbour of the source message is not a hit; a result from several messages is when one is a source.
    assert beam.hits([{16}, {18}], sources) == (False, False)
    assert beam.hits([{16, 17}], sources) == (True, True)


def test_hits_sum_per_ability_and_overall():
    tally = beam.Tally()
    tally.add("event_ordering", True, True)
    tally.add("event_ordering", False, False)
    tally.add("knowledge_update", False, True)
    tally.add("knowledge_update", False, True)
    assert tally.rates("event_ordering") == (0.5, 0.5, 2)
    assert tally.rates("knowledge_update") == (0.0, 1.0, 2)
    assert tally.rates() == (0.25, 0.75, 4)
    assert tally.rates("summarization")[2] == 0


def test_chats_are_chosen_by_folder_and_an_unknown_one_is_named(chat, tmp_path):
    assert beam.is_beam_folder(tmp_path)
    assert [c.name for c in beam.load_chats(tmp_path, ["7"])] == ["7"]
    with pytest.raises(SystemExit, match="no chat folder 9"):
        beam.load_chats(tmp_path, ["7", "9"])
    assert not beam.is_beam_folder(tmp_path / "7")
