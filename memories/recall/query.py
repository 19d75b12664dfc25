"""Recall: the facts most relevant to a question, among those recallable in a place, ranked as the mode asks.
One statement (`memories.recall.candidates`) decides what may be returned; this module ranks and says what gave way."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection
from django.utils import timezone

from lib.metrics import observe_stages
from memories.embeddings import embedders
from memories.recall import contextual, ranking, reranker
from memories.recall.asker import Asker, asker_of
from memories.recall.candidates import (
    RESULT_COLUMNS,
    RRF_K,
    UNEMBEDDED_COUNT_CAP,
    RecallPlan,
    RecallRequest,
    base_predicate,
    candidates_plan,
    not_quarantined,
    place_params,
    result_columns,
    tenant_literal,
)
from memories.recall.hnsw import tenant_hnsw_index
from memories.scopes import Place

logger = logging.getLogger(__name__)

# The modes (docs/recall.md): `semantic` ranks by cosine distance (exact below the HNSW threshold, the tenant's
# partial HNSW index above it, re-checked, with an exact fallback); `lexical` by `ts_rank` over the stored
# tsvector; `hybrid` fuses both by reciprocal rank (k = 60); `recent` is newest first; `contextual` re-ranks
# the hybrid candidates and their neighbours by BM25 and cosine z-scores, context, speaker and time;
# `reranked` is contextual then an HTTP reranker when configured; `auto` is contextual with a question and an
# embedder, recent otherwise. A meaning mode without a vector gives the most recent facts (as the seed does),
# contextual and reranked rank by words; pinned facts come first; what gave way is said in `notice`.
MODES = ("auto", "hybrid", "semantic", "lexical", "recent", "contextual", "reranked")
# Modes that rank by meaning alone or first: without a vector they give the most recent facts instead.
MEANING_MODES = ("auto", "hybrid", "semantic")
# Modes that want the question's vector.
VECTOR_MODES = ("auto", "hybrid", "semantic", "contextual", "reranked")
# The recall's stages as /metrics names them, from its timings.
METRIC_STAGES = {
    "embedding": "embed_ms",
    "statement": "sql_ms",
    "ranking": "rank_ms",
    "rerank": "rerank_ms",
    "total": "recall_ms",
}


@dataclass
class RecallResult:
    rows: list[dict]
    ranking: dict
    notice: str = ""
    timings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class _Ranking:
    """How a recall ranks: its SQL lists, then contextual re-ranking, then the reranker."""

    lists: tuple[str, ...]
    contextual: bool
    reranked: bool

    def used(self) -> str:
        if self.reranked:
            return "reranked"
        if self.contextual:
            return "contextual"
        return "hybrid" if len(self.lists) == 2 else self.lists[0]


def run_plan(plan: RecallPlan, cursor) -> tuple[list[dict], int | None, int | None]:
    """Execute a plan on a cursor; returns (rows, rows the vector list held, unembedded rows here).

    Parallel workers cost more than they save on a 2-core host and a bounded scan; the HNSW scan yields at
    most `ef_search` rows, so the candidate LIMIT must not exceed it. A preparable plan inside a transaction
    is prepared (`_fetch_prepared`); otherwise the settings go in the same simple-protocol query as the
    statement (a client-side binding cursor, as Django's is): one round trip, and `SET LOCAL` holds for
    exactly this statement's implicit transaction when there is no explicit one.
    """
    settings_sql = "SET LOCAL max_parallel_workers_per_gather = 0; "
    if plan.hnsw_index:
        settings_sql += f"SET LOCAL hnsw.ef_search = {int(plan.params['ef'])}; "
    before, after = plan.planner_settings
    if plan.preparable and prepares_statements(cursor):
        names, records = _fetch_prepared(plan, cursor, settings_sql + before)
    else:
        cursor.execute(settings_sql + before + plan.sql + after, plan.params)
        while cursor.description is None and cursor.nextset():
            pass
        names = [column.name for column in cursor.description]
        records = cursor.fetchall()
    found = [dict(zip(names, record, strict=True)) for record in records]
    vec_n = found[0]["vec_n"] if found else None
    unembedded = found[0]["unembedded"] if found else None
    rows = [record for record in found if record["id"] is not None]
    for row in rows:
        row.pop("vec_n", None)
        row.pop("unembedded", None)
    return readable_rows(rows, read="recall"), vec_n, unembedded


# A prepared recall statement is planned once per database session, for every tenant without an HNSW index (the
# tenant is a parameter, and the row-level policies read it at run time). Its planning was half of a small
# tenant's statement (3.5 of about 7 ms).
GENERIC_PLAN = ("SET LOCAL plan_cache_mode = force_generic_plan", "SET LOCAL plan_cache_mode TO DEFAULT")


def prepares_statements(cursor) -> bool:
    """Whether a recall on this cursor may be prepared: inside a transaction (its settings are `SET LOCAL`), on a
    connection that prepares at all: not behind a pooler in transaction mode, which may hand the next statement
    to another server session (`DATABASE_TRANSACTION_POOLER`: psycopg's `prepare_threshold` is None)."""
    raw = getattr(cursor, "cursor", cursor).connection
    # Outside autocommit psycopg opens the transaction with the first statement, which may be this one's settings.
    in_transaction = not raw.autocommit or raw.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    return raw.prepare_threshold is not None and in_transaction


class _PreparingCursor(psycopg.Cursor):
    """A server-binding cursor that prepares its statement at the first execution (psycopg names it and keeps it
    for the session)."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


def _fetch_prepared(plan: RecallPlan, cursor, settings_sql: str) -> tuple[list[str], list[tuple]]:
    """The plan's rows, prepared and planned generically; its settings before and after as their own queries.
    Through Django's cursor wrapper, so what wraps or logs statements sees it as any other."""
    cursor.execute(settings_sql + GENERIC_PLAN[0])
    # Django's wrappers take the driver's cursor; the stubs name Django's own wrapper.
    preparing: Any = _PreparingCursor(getattr(cursor, "cursor", cursor).connection)
    bound = connection.make_debug_cursor(preparing) if connection.queries_logged else connection.make_cursor(preparing)
    with bound:
        bound.execute(plan.sql, plan.params)
        names = [column.name for column in bound.description]
        records = bound.fetchall()
    cursor.execute(GENERIC_PLAN[1] + plan.planner_settings[1])
    return names, records


def readable_rows(rows: list[dict], *, read: str) -> list[dict]:
    """The rows but those `result_columns` marked unreadable, each of which is logged: one bad row (a time past
    the bound, written around the database's CHECK) is left out, and the read answers normally."""
    kept = []
    for row in rows:
        if row.pop("unreadable", False):
            logger.error("%s skipped memory %s: a time outside 1900-2999 UTC; fix or quarantine it", read, row["id"])
        else:
            kept.append(row)
    return kept


def _execute(plan: RecallPlan) -> tuple[list[dict], int | None, int | None]:
    with connection.cursor() as cursor:
        return run_plan(plan, cursor)


def recall(
    *,
    organisation,
    place: Place,
    question: str = "",
    limit: int | None = None,
    mode: str = "auto",
    agent=None,
    now: datetime | None = None,
    occurred_after: datetime | None = None,
    occurred_before: datetime | None = None,
    ranking_config=None,
) -> RecallResult:
    """The facts to give a turn in `place`, best first, with how they were ranked and what gave way.

    `ranking_config` (a `memories.recall.ranking.RankingConfig`) overrides contextual ranking's weights (the
    quality benchmark's ablations).
    """
    started = time.perf_counter()
    limit = limit or settings.MEMORY_RECALL_DEFAULT_LIMIT
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    question = (question or "").strip()
    notices: list[str] = []
    query_vector, model, embed_ms = _question_vector(question, mode, notices)
    how = _choose_ranking(mode, question, query_vector, notices)
    organisation_id = getattr(organisation, "pk", organisation)
    config = ranking_config or ranking.DEFAULT_CONFIG
    hnsw_index = tenant_hnsw_index(organisation_id) if "semantic" in how.lists else None
    request = RecallRequest(
        organisation_id=organisation_id,
        place=place,
        agent_id=getattr(agent, "pk", agent),
        limit=max(limit, contextual.CANDIDATES) if how.contextual else limit,
        # Contextual ranking re-scores its candidates itself: each list need only offer as many.
        pool=contextual.CANDIDATES if how.contextual else None,
        own_profile=config.standing_candidates if how.contextual else 0,
        lists=how.lists,
        question=question,
        query_vector=query_vector,
        model=model,
        now=now or timezone.now(),
        hnsw_index=hnsw_index,
        count_unembedded="semantic" in how.lists,
        occurred_after=occurred_after,
        occurred_before=occurred_before,
        # Prepared and planned once where measured faster (docs/recall.md): contextual, and no HNSW index to prove.
        bound_tenant=how.contextual and hnsw_index is None,
    )
    sql_started = time.perf_counter()
    rows, unembedded, vector_search, rank_ms = _ranked_rows(request, how, config, limit=limit)
    sql_ms = _ms_since(sql_started)
    rows, how, rerank_ms = _reranked(rows, how, question=question, limit=limit, notices=notices)
    if unembedded:
        notices.append(_unembedded_notice(unembedded, how.lists))
    report = _ranking_report(mode, how, model=model, vector_search=vector_search, limit=limit, config=config)
    timings = _observed(
        embed_ms=embed_ms, sql_ms=sql_ms, rank_ms=rank_ms, rerank_ms=rerank_ms, recall_ms=_ms_since(started)
    )
    return RecallResult(rows, report, " ".join(notices), timings)


def _observed(**timings: float) -> dict[str, float]:
    """The recall's timings in milliseconds, recorded for /metrics by stage as well."""
    observe_stages("recall", {stage: timings[key] / 1000 for stage, key in METRIC_STAGES.items()})
    return timings


def _question_vector(question: str, mode: str, notices: list[str]) -> tuple[list[float] | None, str, float]:
    """The question's vector and the model that made it, when the mode ranks by meaning; and how long it took.

    Without one, `notices` says what the recall does instead: contextual and
    reranked rank by words as well as meaning, so they still rank by words.
    """
    if mode not in VECTOR_MODES or not question:
        return None, "", 0.0
    instead = (
        "the most recent facts here were given instead of the most relevant"
        if mode in MEANING_MODES
        else "it was ranked by its words only"
    )
    embedder = embedders.get_embedder()
    if not embedder.available:
        notices.append(f"No embedder is configured, so {instead}.")
        return None, "", 0.0
    started = time.perf_counter()
    try:
        vector, model = embedders.embed_query(question), embedder.name
    except embedders.EmbeddingError as error:
        notices.append(f"The question could not be embedded ({error}), so {instead}.")
        vector, model = None, ""
    return vector, model, _ms_since(started)


def _choose_ranking(mode: str, question: str, query_vector, notices: list[str]) -> _Ranking:
    """The lists a mode ranks by given what it has (a question, a vector), and whether it re-ranks them."""
    if not question:
        if mode not in ("recent", "auto"):
            notices.append(f"No question was given, so {mode} recall fell back to the most recent facts.")
        lists: tuple[str, ...] = ("recent",)
    elif mode == "recent" or (query_vector is None and mode in MEANING_MODES):
        # As the seed does: with no vector, the place's most recent facts rather than word
        # matching, which may return nothing at all; the notice says which happened.
        lists = ("recent",)
    elif mode == "lexical" or query_vector is None:
        lists = ("lexical",)
    elif mode == "semantic":
        lists = ("semantic",)
    else:
        lists = ("semantic", "lexical")
    contextual_mode = bool(question) and (
        mode in ("contextual", "reranked") or (mode == "auto" and query_vector is not None)
    )
    rerank_mode = mode == "reranked" and bool(question)
    if rerank_mode and not reranker.configured():
        notices.append("No reranker is configured (ARCHIVIST_RERANKER_URL), so contextual ranking was used.")
        rerank_mode = False
    return _Ranking(lists=lists, contextual=contextual_mode, reranked=rerank_mode)


def _ranked_rows(
    request: RecallRequest, how: _Ranking, config: ranking.RankingConfig, *, limit: int
) -> tuple[list[dict], int | None, str | None, float]:
    """The rows in their order (contextually ranked, if so), the rows here not searchable by meaning,
    how the vector list was searched, and how long contextual ranking took (ms)."""

    def plan(hnsw_index: str | None) -> RecallPlan:
        exact_or_not = replace(request, hnsw_index=hnsw_index)
        return (
            contextual.contextual_plan(exact_or_not, config=config) if how.contextual else candidates_plan(exact_or_not)
        )

    first = plan(request.hnsw_index)
    rows, vec_n, unembedded = _execute(first)
    vector_search = ("hnsw" if request.hnsw_index else "exact") if "semantic" in request.lists else None
    if request.hnsw_index and (vec_n or 0) < first.params["pool"]:
        # The filters left fewer candidates than the list wants: the approximate
        # list may be missing true neighbours, so search this tenant exactly.
        rows, _, unembedded = _execute(plan(None))
        vector_search = "exact (hnsw fallback)"
    rank_started = time.perf_counter()
    if how.contextual:
        rows = contextual.rank_rows(
            rows,
            question=request.question,
            limit=max(limit, settings.RERANKER_CANDIDATES) if how.reranked else limit,
            config=config,
            asker=_asker(request, config),
        )
    return rows, unembedded, vector_search, _ms_since(rank_started)


def _asker(request: RecallRequest, config: ranking.RankingConfig) -> Asker | None:
    """Who asks, when the question is about them and the asker rule is on (their names are read only then)."""
    if not config.asker_boost or not ranking.about_the_asker(request.question):
        return None
    return asker_of(organisation_id=request.organisation_id, place=request.place)


def _reranked(
    rows: list[dict], how: _Ranking, *, question: str, limit: int, notices: list[str]
) -> tuple[list[dict], _Ranking, float]:
    """The rows reordered by the reranker when the recall asks for it; how it ranked in the end; how long it took."""
    if not how.reranked:
        return rows, how, 0.0
    started = time.perf_counter()
    rows, gave_way = reranker.rerank_rows(rows, question=question, limit=limit)
    if gave_way:
        notices.append(gave_way)
        how = replace(how, reranked=False)
    return rows, how, _ms_since(started)


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _unembedded_notice(unembedded: int, lists: tuple[str, ...]) -> str:
    shown = f"{unembedded}+" if unembedded >= UNEMBEDDED_COUNT_CAP else str(unembedded)
    how = "by their words only" if "lexical" in lists else "not at all by meaning"
    return (
        f"{shown} fact(s) here are not searchable by meaning yet (not embedded, or embedded by another model) "
        f"and were searched {how}."
    )


def _ranking_report(
    mode: str, how: _Ranking, *, model: str, vector_search: str | None, limit: int, config: ranking.RankingConfig
) -> dict:
    """What a recall says of its ranking (`ranking` in the answer)."""
    report: dict[str, object] = {
        "requested": mode,
        "used": how.used(),
        "lists": list(how.lists),
        "fusion": f"reciprocal rank, k={RRF_K}" if len(how.lists) == 2 else None,
        "embedding_model": model or None,
        "vector_search": vector_search,
        "pinned_first": True,
        "limit": limit,
    }
    if how.contextual:
        report["fusion"] = contextual.plan_described(config)["fusion"]
        report["contextual"] = contextual.plan_described(config)
    if how.reranked:
        report["reranker"] = {"style": settings.RERANKER_STYLE, "candidates": settings.RERANKER_CANDIDATES}
    return report


RENDER_FETCH_FACTOR = 3


def render_candidates(*, organisation, place: Place, agent, caps: dict, now: datetime) -> tuple[list[dict], dict]:
    """Facts recallable in `place` for a render, pinned then newest within each scope and section.

    Reads a bounded number per section (a few times its count limit, so fading
    and precedence rarely leave a section short) and counts each scope's rows,
    so what was not read is reported as left out rather than silently missing.
    """
    organisation_id = getattr(organisation, "pk", organisation)
    agent_id = getattr(agent, "pk", agent)
    base = base_predicate(organisation_id=organisation_id, place=place, agent_id=agent_id)
    # Episodes (transcript lines) are never section filler; `with_recalled_episodes` adds those the turn's
    # question recalls.
    base += " AND m.source_kind <> 'episode'"
    fetch = {
        scope: {
            "profile": caps[scope].profile_limit * RENDER_FETCH_FACTOR,
            "recent": caps[scope].recent_limit * RENDER_FETCH_FACTOR,
        }
        for scope in caps
    }
    # One bounded, newest-first read per scope and section (served by the
    # recent and pinned partial indexes), instead of ranking every row of a
    # large tenant; pinned facts are read whatever their age.
    parts = [f"(SELECT m.id FROM memories_memory m WHERE {base} AND m.pinned ORDER BY m.created_at DESC LIMIT 500)"]
    for scope, sections in fetch.items():
        for section, count in sections.items():
            tier = "m.tier = 'profile'" if section == "profile" else "m.tier <> 'profile'"
            parts.append(
                f"(SELECT m.id FROM memories_memory m WHERE {base} AND m.scope = '{scope}' AND {tier}"
                f" ORDER BY m.created_at DESC LIMIT {int(count)})"
            )
    sql = (
        "WITH picked AS (\n  " + "\n  UNION\n  ".join(parts) + "\n)\n"
        f"SELECT {result_columns()} FROM picked p JOIN memories_memory m ON m.id = p.id"
        f" AND m.organisation_id = {tenant_literal(organisation_id)} AND {not_quarantined()}\n"
        "ORDER BY m.pinned DESC, m.created_at DESC, m.id"
    )
    totals_sql = f"SELECT m.scope, count(*) FROM memories_memory m WHERE {base} GROUP BY m.scope"
    params = place_params(place=place, agent_id=agent_id, now=now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column.name for column in cursor.description]
        rows = readable_rows([dict(zip(names, record, strict=True)) for record in cursor.fetchall()], read="render")
        cursor.execute(totals_sql, params)
        totals = dict(cursor.fetchall())
    return rows, totals


def with_recalled_episodes(rows: list[dict], recalled: list[dict], *, now: datetime, fade_days: int) -> list[dict]:
    """Render's rows plus the episodes the question recalled, except those older than the fade window (they fade
    like notes, from when they were written)."""
    have = {str(row["id"]) for row in rows}
    oldest = now - timedelta(days=fade_days)
    extra = [
        {name: row[name] for name in RESULT_COLUMNS}
        for row in recalled
        if row["source_kind"] == "episode" and str(row["id"]) not in have and row["created_at"] >= oldest
    ]
    return rows + extra
