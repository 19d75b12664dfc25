"""An optional reranker over HTTP, for `mode: reranked`: a cross-encoder orders contextual recall's best candidates."""

# Off unless `ARCHIVIST_RERANKER_URL` is set. Two request shapes are spoken:
#
# - `tei` (text-embeddings-inference, and servers copying it): `POST {url}/rerank`
#   with `{"query", "texts"}`, answered by `[{"index", "score"}, ...]`;
# - `cohere` (Cohere, Jina, Voyage, vLLM): `POST {url}/rerank` with
#   `{"model", "query", "documents", "top_n"}`, answered by
#   `{"results": [{"index", "relevance_score"}, ...]}`.
#
# A reranker that is slow, down or answers nonsense never fails a recall: the
# contextual order stands and `notice` says why.

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import requests
from django.conf import settings


class RerankError(Exception):
    """The reranker could not score the candidates."""


def configured() -> bool:
    return bool(settings.RERANKER_URL)


def _endpoint() -> str:
    return settings.RERANKER_URL.rstrip("/") + "/rerank"


def _request(question: str, texts: Sequence[str]) -> Any:
    if settings.RERANKER_STYLE == "cohere":
        payload: dict = {"query": question, "documents": list(texts), "top_n": len(texts)}
        if settings.RERANKER_MODEL:
            payload["model"] = settings.RERANKER_MODEL
    else:
        payload = {"query": question, "texts": list(texts)}
    headers = {"Authorization": f"Bearer {settings.RERANKER_KEY}"} if settings.RERANKER_KEY else {}
    try:
        response = requests.post(_endpoint(), json=payload, headers=headers, timeout=settings.RERANKER_TIMEOUT_SECONDS)
    except requests.RequestException as error:
        raise RerankError(f"{_endpoint()} unreachable: {error.__class__.__name__}") from error
    if response.status_code != 200:
        raise RerankError(f"{_endpoint()} answered {response.status_code}")
    try:
        return response.json()
    except ValueError as error:
        raise RerankError(f"{_endpoint()} answered something that is not JSON") from error


def scores(question: str, texts: Sequence[str]) -> list[float]:
    """The reranker's relevance score of each text, in the texts' order."""
    if not texts:
        return []
    answer = _request(question, texts)
    try:
        if settings.RERANKER_STYLE == "cohere":
            items = [(int(item["index"]), float(item["relevance_score"])) for item in answer["results"]]
        else:
            items = [(int(item["index"]), float(item["score"])) for item in answer]
    except (KeyError, TypeError, ValueError) as error:
        raise RerankError(f"{_endpoint()} answered something that is not a rerank response") from error
    found = dict(items)
    if sorted(found) != list(range(len(texts))):
        raise RerankError(f"{_endpoint()} scored {len(found)} of {len(texts)} candidates")
    return [found[index] for index in range(len(texts))]


def rerank_rows(rows: list[dict], *, question: str, limit: int) -> tuple[list[dict], str]:
    """Rows (best first, pinned first) reordered by the reranker below the pinned ones; and a notice, if it gave way."""
    pinned = [row for row in rows if row.get("pin_rank") is not None]
    rest = [row for row in rows if row.get("pin_rank") is None][: settings.RERANKER_CANDIDATES]
    try:
        relevance = scores(question, [row["body"] for row in rest])
    except RerankError as error:
        return rows[:limit], f"The reranker failed ({error}); contextual ranking was used."
    order = sorted(range(len(rest)), key=lambda index: -relevance[index])
    reranked = []
    for index in order:
        row = dict(rest[index])
        row["score"] = relevance[index]
        reranked.append(row)
    return (pinned + reranked)[:limit], ""
