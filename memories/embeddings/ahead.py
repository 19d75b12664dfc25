"""A turn's question embedded ahead (recall, render): started when the body is read, while the token's round trip runs.

A recall spends about 6 ms embedding its question and, before that, about 2.5 ms
authenticating, reading its place and validating its body, mostly waiting on
PostgreSQL. The embedding needs only the question, and ONNX Runtime (like torch
and an HTTP embedder) lets go of the GIL while it works, so it can run on the
other core during that wait (`bench/question_ahead.py` measures what it saves).

Work is done ahead only for a token that authenticated in this process within
`TRUST_SECONDS`: an unknown or forged token costs the server no embedding. The
token's own statement still decides the request; a refused token's vector is
dropped unread. What is embedded ahead is used only for exactly the question
recall is given (after validation), so a body the serializers change or refuse
is embedded again or not at all.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from memories.embeddings import embedders

logger = logging.getLogger(__name__)

# How long a token that authenticated stays one whose questions are embedded ahead.
TRUST_SECONDS = 600.0
# Tokens remembered per process; the oldest are forgotten first.
TRUSTED_TOKENS = 4096
# One per request thread a web worker runs (config/gunicorn.py): a question never waits for another's.
THREADS = 8

_trusted: OrderedDict[str, float] = OrderedDict()
_trusted_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


@dataclass(frozen=True)
class QuestionAhead:
    """A question being embedded, and what the embedding will give: (vector, model id, milliseconds)."""

    question: str
    future: Future

    def result(self) -> tuple[list[float] | None, str, float]:
        """Waits for the embedding; raises what it raised (`embedders.EmbeddingError`)."""
        return self.future.result()


def trust(token_hash: str) -> None:
    """This token has just authenticated: its next questions may be embedded ahead."""
    with _trusted_lock:
        _trusted[token_hash] = time.monotonic() + TRUST_SECONDS
        _trusted.move_to_end(token_hash)
        while len(_trusted) > TRUSTED_TOKENS:
            _trusted.popitem(last=False)


def trusted(token_hash: str) -> bool:
    with _trusted_lock:
        until = _trusted.get(token_hash)
        if until is not None and until < time.monotonic():
            del _trusted[token_hash]
            return False
        return until is not None


def forget_trusted() -> None:
    with _trusted_lock:
        _trusted.clear()


def _embedded(question: str) -> tuple[list[float] | None, str, float]:
    started = time.perf_counter()
    vector = embedders.embed_query(question)
    return vector, embedders.get_embedder().name, (time.perf_counter() - started) * 1000


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="question-ahead")
    return _pool


def embed_ahead(question: str, *, token_hash: str) -> QuestionAhead | None:
    """Start embedding `question` (already stripped) if this token is trusted and an embedder is configured."""
    if not question or not trusted(token_hash) or not embedders.get_embedder().available:
        return None
    try:
        return QuestionAhead(question, _executor().submit(_embedded, question))
    except RuntimeError as error:  # the pool is shutting down with the process: embed in the request instead
        logger.info("question not embedded ahead (%s): recall embeds it itself", error)
        return None
