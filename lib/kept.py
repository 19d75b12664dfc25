"""Answers kept briefly per process: a read every request would repeat, renewed after a few seconds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class KeptAnswers(Generic[T]):
    """Each key's answer, read by `read(key)` at most once per `seconds`; `forget` drops one key, or all."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._answers: dict[str, tuple[float, T]] = {}

    def get(self, key, read: Callable[[str], T]) -> T:
        key = str(key)
        now = time.monotonic()
        kept = self._answers.get(key)
        if kept and kept[0] > now:
            return kept[1]
        answer = read(key)
        self._answers[key] = (now + self.seconds, answer)
        return answer

    def forget(self, key=None) -> None:
        if key is None:
            self._answers.clear()
        else:
            self._answers.pop(str(key), None)
