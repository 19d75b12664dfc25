"""lib.kept: an answer is read once per key until its seconds pass or it is forgotten."""

from __future__ import annotations

from lib.kept import KeptAnswers


def test_an_answer_is_read_once_per_key_until_forgotten():
    reads = []
    kept = KeptAnswers[int](60)

    def read(key: str) -> int:
        reads.append(key)
        return len(reads)

    assert kept.get("a", read) == 1
    assert kept.get("a", read) == 1  # kept
    assert kept.get("b", read) == 2  # another key is read (the positive control)
    kept.forget("a")
    assert kept.get("a", read) == 3
    kept.forget()
    assert kept.get("b", read) == 4
    assert reads == ["a", "b", "a", "b"]


def test_an_answer_past_its_seconds_is_read_again():
    reads = []
    kept = KeptAnswers[int](0)
    kept.get("a", lambda key: reads.append(key) or 0)
    kept.get("a", lambda key: reads.append(key) or 0)
    assert reads == ["a", "a"]
