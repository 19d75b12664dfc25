"""Recall: the facts most relevant to a question, among those recallable in a place.

Everything a recall may return is decided in one SQL statement:

- the tenant predicate is a literal (`organisation_id = '…'::uuid`), so the
  planner sees the tenant at plan time and can use that tenant's partial HNSW
  index (a bound parameter under a generic plan would not);
- the scope predicate is `scopes.recallable` as SQL: workspace rows, this
  channel's rows, and this person's rows only in a DM with exactly them;
- erased, expired, corrected (superseded) and system rows, and promotion
  tombstones, never match;
- vectors are compared only with vectors of the current embedding model.

Ranking (`mode`):

- `semantic`: pgvector cosine distance. Exact over the covering index for an
  organisation below the HNSW threshold; for a larger one, candidates come from
  its partial HNSW index and are re-checked, with an exact scan as the fallback
  when the filters leave too few (see docs/recall.md).
- `lexical`: `ts_rank` over the stored tsvector; any word of the question may match.
- `hybrid`: both lists fused by reciprocal rank (k = 60).
- `recent`: newest first.
- `contextual`: the hybrid candidates and the facts remembered next to them in
  the same place, re-ranked by BM25 and cosine z-scores, conversational
  context, the speaker and the time a question asks about
  (`memories.recall.contextual`, `memories.recall.ranking`, docs/recall.md).
- `reranked`: contextual, then its best candidates ordered by an HTTP
  reranker when one is configured (`memories.recall.reranker`); contextual otherwise.
- `auto`: contextual when there is a question and an embedder (it recalls the
  right fact most often: docs/benchmarks.md, "Recall quality"), recent otherwise.

A meaning mode (`auto`, `hybrid`, `semantic`) that cannot have a vector (no
embedder, an embedding error) gives the place's most recent facts, as the seed
does, rather than word matching that may return nothing; `contextual` and
`reranked`, which rank by words too, rank by words. Rows holding another
model's vector count as not yet searchable. Each of these is said in `notice`.

`occurred_after` and `occurred_before` keep facts whose time (when they
happened, or when they were written if that is unknown) falls in the interval.

Pinned facts recallable here always come first. Whatever had to give way (no
embedder, a question that could not be embedded, rows not embedded yet) is
said in `notice`.
"""

from __future__ import annotations

import functools
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memories.db.indexes import LIVE_PREDICATE
from memories.embeddings import embedders
from memories.models import TenantVectorIndex
from memories.recall import contextual, ranking, reranker
from memories.scopes import Place, solo_person

MODES = ("auto", "hybrid", "semantic", "lexical", "recent", "contextual", "reranked")
# Modes that rank by meaning alone or first: without a vector they give the most recent facts instead.
MEANING_MODES = ("auto", "hybrid", "semantic")
RRF_K = 60
# Rows each ranked list contributes before fusion: enough that a fact ranked
# modestly by both lists can still win, few enough to keep the sort small.
POOL_MIN = 30
POOL_PER_RESULT = 3
UNEMBEDDED_COUNT_CAP = 1000
HNSW_CACHE_SECONDS = 30.0

RESULT_COLUMNS = (
    "id",
    "body",
    "scope",
    "scope_ref",
    "scope_label",
    "bucket",
    "author",
    "tier",
    "pinned",
    "source_kind",
    "source_ref",
    "source_label",
    "source_run_id",
    "subject_type",
    "subject_id",
    "agent_id",
    "created_at",
    "occurred_at",
    "expires_at",
)
RANK_COLUMNS = ("pin_rank", "score", "semantic_rank", "lexical_rank", "recent_rank", "distance")


@dataclass
class RecallResult:
    rows: list[dict]
    ranking: dict
    notice: str = ""
    timings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RecallPlan:
    """One recall as SQL: the statement, its parameters and what it uses. Built without touching the database."""

    sql: str
    params: dict
    lists: tuple[str, ...]
    hnsw_index: str | None


def tenant_literal(organisation_id) -> str:
    """The tenant as a SQL literal. Only a parsed UUID is ever formatted, so nothing else can reach the SQL."""
    return f"'{uuid.UUID(str(organisation_id))}'::uuid"


def base_predicate(*, organisation_id, place: Place, agent_id, alias: str = "m", scopes_sql: str | None = None) -> str:
    """Rows recallable in `place` for this principal, as SQL over `alias` (parameters: now, channel, person, agent)."""
    a = alias
    if scopes_sql is None:
        scopes_sql = scope_predicate(place=place, alias=alias)
    live = " AND ".join(f"{a}.{term.strip()}" for term in LIVE_PREDICATE.split(" AND "))
    sql = (
        f"{a}.organisation_id = {tenant_literal(organisation_id)} AND {live} AND {a}.stance IS NULL"
        f" AND {a}.expires_at > %(now)s AND ({scopes_sql})"
    )
    if agent_id is not None:
        # An agent recalls what it holds and what the organisation's agents share.
        sql += f" AND ({a}.agent_id IS NULL OR {a}.agent_id = %(agent)s)"
    return sql


def time_predicate(*, occurred_after=None, occurred_before=None, alias: str = "m") -> str:
    """The time filters as SQL (parameters: occurred_after, occurred_before); a fact's time is when it
    happened, or when it was written if that is unknown."""
    when = f"coalesce({alias}.occurred_at, {alias}.created_at)"
    sql = ""
    if occurred_after is not None:
        sql += f" AND {when} >= %(occurred_after)s"
    if occurred_before is not None:
        sql += f" AND {when} < %(occurred_before)s"
    return sql


def scope_predicate(*, place: Place, alias: str = "m", include_workspace: bool = True) -> str:
    """`scopes.recallable` as SQL."""
    a = alias
    parts = []
    if include_workspace:
        parts.append(f"{a}.scope = 'workspace'")
    parts.append(f"({a}.scope = 'channel' AND {a}.scope_ref = %(channel)s)")
    if solo_person(place) is not None:
        parts.append(f"({a}.scope = 'person' AND {a}.scope_ref = %(person)s)")
    return " OR ".join(parts)


_hnsw_cache: dict[str, tuple[float, str | None]] = {}


def tenant_hnsw_index(organisation_id) -> str | None:
    """The ready HNSW index of this organisation, if it has one (cached briefly per process)."""
    key = str(organisation_id)
    cached = _hnsw_cache.get(key)
    now = time.monotonic()
    if cached and cached[0] > now:
        return cached[1]
    name = (
        TenantVectorIndex.objects.filter(organisation_id=key, state=TenantVectorIndex.State.READY)
        .values_list("index_name", flat=True)
        .first()
    )
    _hnsw_cache[key] = (now + HNSW_CACHE_SECONDS, name)
    return name


def forget_hnsw_cache(organisation_id=None) -> None:
    if organisation_id is None:
        _hnsw_cache.clear()
    else:
        _hnsw_cache.pop(str(organisation_id), None)


# The question's words, each quoted as a lexeme and joined with OR, so a fact
# matching some of them ranks (plainto_tsquery would demand all of them).
_TSQUERY = r"""tsq AS (
  SELECT to_tsquery('simple', coalesce(string_agg(
    '''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''', ' | '), '')) AS query
  FROM unnest(to_tsvector('english', %(question)s))
)"""


def build_plan(**kwargs) -> RecallPlan:
    """The recall statement for these ranked lists (`semantic`, `lexical`, `recent`), pinned facts first."""
    ctes, params, _ = candidate_ctes(**kwargs)
    organisation_id = kwargs["organisation_id"]
    columns = ", ".join(f"m.{name}" for name in RESULT_COLUMNS)
    ranks = ", ".join(f"c.{name}" for name in RANK_COLUMNS)
    sql = (
        "WITH " + ",\n".join(ctes) + "\n"
        "SELECT r.*, stats.vec_n, stats.unembedded FROM stats LEFT JOIN LATERAL (\n"
        f"  SELECT {columns}, {ranks} FROM cand c JOIN memories_memory m\n"
        f"    ON m.id = c.id AND m.organisation_id = {tenant_literal(organisation_id)}\n"
        "  ORDER BY c.pin_rank IS NULL, c.pin_rank, c.score DESC NULLS LAST, m.created_at DESC, m.id\n"
        "  LIMIT %(limit)s\n"
        ") r ON true"
    )
    return RecallPlan(sql=sql, params=params, lists=kwargs["lists"], hnsw_index=kwargs.get("hnsw_index"))


def candidate_ctes(
    *,
    organisation_id,
    place: Place,
    agent_id=None,
    limit: int,
    lists: tuple[str, ...],
    question: str = "",
    query_vector: list[float] | None = None,
    model: str = "",
    now: datetime,
    hnsw_index: str | None = None,
    count_unembedded: bool = False,
    occurred_after: datetime | None = None,
    occurred_before: datetime | None = None,
    pool: int | None = None,
) -> tuple[list[str], dict, str]:
    """The common table expressions of a recall, their parameters, and the recall predicate they share.

    `cand` holds every candidate with its fused score and ranks (pinned facts
    with their pin rank), `stats` what the vector list held and how many rows
    here are not embedded yet; the statement that ends them chooses the rows.
    """
    pool = pool or max(POOL_MIN, limit * POOL_PER_RESULT)
    params: dict = {
        "now": now,
        "channel": place.channel,
        "person": solo_person(place) or "",
        "agent": str(agent_id) if agent_id is not None else None,
        "limit": limit,
        "pool": pool,
        "rrf_k": RRF_K,
        "occurred_after": occurred_after,
        "occurred_before": occurred_before,
    }
    during = time_predicate(occurred_after=occurred_after, occurred_before=occurred_before)
    base = base_predicate(organisation_id=organisation_id, place=place, agent_id=agent_id) + during
    ctes: list[str] = []
    ranked: list[str] = []

    if "semantic" in lists:
        assert query_vector is not None  # the semantic list is asked for only with a vector
        params["qvec"] = "[" + ",".join(f"{value:.7g}" for value in query_vector) + "]"
        params["model"] = model
        if hnsw_index:
            params["ef"] = settings.MEMORY_VECTOR_EF_SEARCH
            live = " AND ".join(f"w.{term.strip()}" for term in LIVE_PREDICATE.split(" AND "))
            # The partial index's own predicate, literally, so the planner can prove it applies;
            # the other filters are checked on the candidates it returns.
            ctes.append(
                "wcand AS MATERIALIZED (\n"
                "  SELECT w.id, w.embedding <=> %(qvec)s::vector AS distance FROM memories_memory w\n"
                f"  WHERE w.organisation_id = {tenant_literal(organisation_id)} AND w.scope = 'workspace'"
                f" AND {live} AND w.embedding IS NOT NULL\n"
                "  ORDER BY w.embedding <=> %(qvec)s::vector LIMIT %(ef)s\n)"
            )
            narrow = (
                base_predicate(
                    organisation_id=organisation_id,
                    place=place,
                    agent_id=agent_id,
                    scopes_sql=scope_predicate(place=place, include_workspace=False),
                )
                + during
            )
            source = (
                "(SELECT c.id, c.distance FROM wcand c JOIN memories_memory m ON m.id = c.id\n"
                f"    WHERE {base} AND m.embedding_model = %(model)s)\n"
                "  UNION ALL\n"
                "  (SELECT m.id, m.embedding <=> %(qvec)s::vector AS distance FROM memories_memory m\n"
                f"    WHERE {narrow} AND m.embedding IS NOT NULL AND m.embedding_model = %(model)s\n"
                "    ORDER BY 2 LIMIT %(pool)s)"
            )
        else:
            source = (
                "SELECT m.id, m.embedding <=> %(qvec)s::vector AS distance FROM memories_memory m\n"
                f"    WHERE {base} AND m.embedding IS NOT NULL AND m.embedding_model = %(model)s\n"
                "    ORDER BY 2 LIMIT %(pool)s"
            )
        ctes.append(
            "vec AS MATERIALIZED (\n"
            "  SELECT id, distance, row_number() OVER (ORDER BY distance, id) AS rank\n"
            f"  FROM ({source}) s ORDER BY distance, id LIMIT %(pool)s\n)"
        )
        ranked.append("SELECT id, rank, 'semantic' AS list, distance FROM vec")

    if "lexical" in lists:
        params["question"] = question
        ctes.append(_TSQUERY)
        ctes.append(
            "lex AS MATERIALIZED (\n"
            "  SELECT id, row_number() OVER (ORDER BY score DESC, created_at DESC, id) AS rank FROM (\n"
            "    SELECT m.id, ts_rank(m.search_vector, tsq.query) AS score, m.created_at\n"
            f"    FROM memories_memory m, tsq WHERE {base} AND m.search_vector @@ tsq.query\n"
            "    ORDER BY score DESC, m.created_at DESC LIMIT %(pool)s) s\n)"
        )
        ranked.append("SELECT id, rank, 'lexical' AS list, NULL::float8 AS distance FROM lex")

    if "recent" in lists:
        ctes.append(
            "rec AS MATERIALIZED (\n"
            "  SELECT m.id, row_number() OVER (ORDER BY m.created_at DESC, m.id DESC) AS rank\n"
            f"  FROM memories_memory m WHERE {base}\n"
            "  ORDER BY m.created_at DESC, m.id DESC LIMIT %(pool)s\n)"
        )
        ranked.append("SELECT id, rank, 'recent' AS list, NULL::float8 AS distance FROM rec")

    ctes.append(
        "pins AS MATERIALIZED (\n"
        "  SELECT m.id, row_number() OVER (ORDER BY m.created_at DESC, m.id DESC) AS rank\n"
        f"  FROM memories_memory m WHERE {base} AND m.pinned\n"
        "  ORDER BY m.created_at DESC, m.id DESC LIMIT %(limit)s\n)"
    )
    union = "\n  UNION ALL ".join(ranked) if ranked else "SELECT NULL::uuid, NULL::bigint, NULL::text, NULL::float8"
    ctes.append(
        "fused AS (\n"
        "  SELECT id, sum(1.0::float8 / (%(rrf_k)s + rank)) AS score,\n"
        "    min(rank) FILTER (WHERE list = 'semantic') AS semantic_rank,\n"
        "    min(rank) FILTER (WHERE list = 'lexical') AS lexical_rank,\n"
        "    min(rank) FILTER (WHERE list = 'recent') AS recent_rank,\n"
        "    min(distance) AS distance\n"
        f"  FROM ({union}) u WHERE id IS NOT NULL GROUP BY id\n)"
    )
    ctes.append(
        "cand AS (\n"
        "  SELECT coalesce(f.id, p.id) AS id, p.rank AS pin_rank, f.score, f.semantic_rank, f.lexical_rank,\n"
        "    f.recent_rank, f.distance\n"
        "  FROM fused f FULL OUTER JOIN pins p ON p.id = f.id\n)"
    )
    stats = ["(SELECT count(*) FROM vec) AS vec_n" if "semantic" in lists else "NULL::bigint AS vec_n"]
    if count_unembedded:
        stats.append(
            "(SELECT count(*) FROM (SELECT 1 FROM memories_memory m WHERE "
            f"{base} AND m.embedding IS NULL LIMIT {UNEMBEDDED_COUNT_CAP}) n)"
            # A vector of another embedding model cannot be compared: such a row is not searchable yet either.
            " + (SELECT count(*) FROM (SELECT 1 FROM memories_memory m WHERE "
            f"{base} AND m.embedding IS NOT NULL AND m.embedding_model <> %(model)s LIMIT {UNEMBEDDED_COUNT_CAP}) o)"
            " AS unembedded"
        )
    else:
        stats.append("NULL::bigint AS unembedded")
    ctes.append("stats AS (SELECT " + ", ".join(stats) + ")")
    return ctes, params, base


def run_plan(plan: RecallPlan, cursor) -> tuple[list[dict], int | None, int | None]:
    """Execute a plan on a cursor; returns (rows, rows the vector list held, unembedded rows here).

    The settings go in the same simple-protocol query as the statement (a
    client-side binding cursor, as Django's is): one round trip, and `SET LOCAL`
    holds for exactly this statement's implicit transaction when there is no
    explicit one. Parallel workers cost more than they save on a 2-core host
    and a bounded scan; the HNSW scan yields at most `ef_search` rows, so the
    candidate LIMIT must not exceed it.
    """
    settings_sql = "SET LOCAL max_parallel_workers_per_gather = 0; "
    if plan.hnsw_index:
        settings_sql += f"SET LOCAL hnsw.ef_search = {int(plan.params['ef'])}; "
    cursor.execute(settings_sql + plan.sql, plan.params)
    while cursor.description is None and cursor.nextset():
        pass
    names = [column.name for column in cursor.description]
    records = [dict(zip(names, record, strict=True)) for record in cursor.fetchall()]
    vec_n = records[0]["vec_n"] if records else None
    unembedded = records[0]["unembedded"] if records else None
    rows = [record for record in records if record["id"] is not None]
    for row in rows:
        row.pop("vec_n", None)
        row.pop("unembedded", None)
    return rows, vec_n, unembedded


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

    `ranking_config` (a `memories.recall.ranking.RankingConfig`) overrides contextual
    ranking's weights; the quality benchmark uses it for its ablations.
    """
    started = time.perf_counter()
    now = now or timezone.now()
    limit = limit or settings.MEMORY_RECALL_DEFAULT_LIMIT
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    question = (question or "").strip()
    notices: list[str] = []
    embed_ms = 0.0

    wants_vector = mode in ("auto", "hybrid", "semantic", "contextual", "reranked") and bool(question)
    query_vector = None
    model = ""
    # Contextual and reranked rank by words as well as meaning, so without a vector they still rank by words.
    instead = (
        "the most recent facts here were given instead of the most relevant"
        if mode in MEANING_MODES
        else ("it was ranked by its words only")
    )
    if wants_vector:
        embedder = embedders.get_embedder()
        if not embedder.available:
            notices.append(f"No embedder is configured, so {instead}.")
        else:
            embed_started = time.perf_counter()
            try:
                query_vector = embedders.embed_query(question)
                model = embedder.name
            except embedders.EmbeddingError as error:
                notices.append(f"The question could not be embedded ({error}), so {instead}.")
            embed_ms = (time.perf_counter() - embed_started) * 1000

    if not question:
        if mode != "recent" and mode != "auto":
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
    organisation_id = organisation.pk if hasattr(organisation, "pk") else organisation
    agent_id = getattr(agent, "pk", agent)
    hnsw = tenant_hnsw_index(organisation_id) if "semantic" in lists else None
    config = ranking_config or ranking.DEFAULT_CONFIG
    plan_kwargs = dict(
        organisation_id=organisation_id,
        place=place,
        agent_id=agent_id,
        limit=max(limit, contextual.CANDIDATES) if contextual_mode else limit,
        # Contextual ranking re-scores its candidates itself: each list need only offer as many.
        pool=contextual.CANDIDATES if contextual_mode else None,
        lists=lists,
        question=question,
        query_vector=query_vector,
        model=model,
        now=now,
        count_unembedded="semantic" in lists,
        occurred_after=occurred_after,
        occurred_before=occurred_before,
    )
    planner = functools.partial(contextual.build_plan, config=config) if contextual_mode else build_plan
    plan = planner(**plan_kwargs, hnsw_index=hnsw)
    sql_started = time.perf_counter()
    rows, vec_n, unembedded = _execute(plan)
    vector_search = ("hnsw" if hnsw else "exact") if "semantic" in lists else None
    if hnsw and (vec_n or 0) < plan.params["pool"]:
        # The filters left fewer candidates than the list wants: the approximate
        # list may be missing true neighbours, so search this tenant exactly.
        rows, vec_n, unembedded = _execute(planner(**plan_kwargs, hnsw_index=None))
        vector_search = "exact (hnsw fallback)"
    if contextual_mode:
        rows = contextual.rank_rows(
            rows,
            organisation_id=organisation_id,
            question=question,
            limit=max(limit, settings.RERANKER_CANDIDATES) if rerank_mode else limit,
            config=config,
        )
    sql_ms = (time.perf_counter() - sql_started) * 1000
    rerank_ms = 0.0
    if rerank_mode:
        rerank_started = time.perf_counter()
        rows, gave_way = reranker.rerank_rows(rows, question=question, limit=limit)
        rerank_ms = (time.perf_counter() - rerank_started) * 1000
        if gave_way:
            notices.append(gave_way)
            rerank_mode = False

    if unembedded:
        shown = f"{unembedded}+" if unembedded >= UNEMBEDDED_COUNT_CAP else str(unembedded)
        how = "by their words only" if "lexical" in lists else "not at all by meaning"
        notices.append(
            f"{shown} fact(s) here are not searchable by meaning yet (not embedded, or embedded by another model) "
            f"and were searched {how}."
        )

    ranking_report: dict[str, Any] = {
        "requested": mode,
        "used": "reranked"
        if rerank_mode
        else "contextual"
        if contextual_mode
        else ("hybrid" if len(lists) == 2 else lists[0]),
        "lists": list(lists),
        "fusion": f"reciprocal rank, k={RRF_K}" if len(lists) == 2 else None,
        "embedding_model": model or None,
        "vector_search": vector_search,
        "pinned_first": True,
        "limit": limit,
    }
    if contextual_mode:
        ranking_report["fusion"] = contextual.describe(config)["fusion"]
        ranking_report["contextual"] = contextual.describe(config)
    if rerank_mode:
        ranking_report["reranker"] = {"style": settings.RERANKER_STYLE, "candidates": settings.RERANKER_CANDIDATES}
    total_ms = (time.perf_counter() - started) * 1000
    return RecallResult(
        rows=rows,
        ranking=ranking_report,
        notice=" ".join(notices),
        timings={"embed_ms": embed_ms, "sql_ms": sql_ms, "rerank_ms": rerank_ms, "recall_ms": total_ms},
    )


RENDER_FETCH_FACTOR = 3


def render_candidates(*, organisation, place: Place, agent, caps: dict, now: datetime) -> tuple[list[dict], dict]:
    """Facts recallable in `place` for a render, pinned then newest within each scope and section.

    Reads a bounded number per section (a few times its count limit, so fading
    and precedence rarely leave a section short) and counts each scope's rows,
    so what was not read is reported as left out rather than silently missing.
    """
    organisation_id = organisation.pk if hasattr(organisation, "pk") else organisation
    agent_id = getattr(agent, "pk", agent)
    base = base_predicate(organisation_id=organisation_id, place=place, agent_id=agent_id)
    # Issue 16: episodes (transcript lines) are never section filler; `with_recalled_episodes`
    # adds those the turn's question recalls.
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
    columns = ", ".join(f"m.{name}" for name in RESULT_COLUMNS)
    sql = (
        "WITH picked AS (\n  " + "\n  UNION\n  ".join(parts) + "\n)\n"
        f"SELECT {columns} FROM picked p JOIN memories_memory m ON m.id = p.id"
        f" AND m.organisation_id = {tenant_literal(organisation_id)}\n"
        "ORDER BY m.pinned DESC, m.created_at DESC, m.id"
    )
    totals_sql = f"SELECT m.scope, count(*) FROM memories_memory m WHERE {base} GROUP BY m.scope"
    params: dict[str, Any] = {
        "now": now,
        "channel": place.channel,
        "person": solo_person(place) or "",
        "agent": str(agent_id) if agent_id is not None else None,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column.name for column in cursor.description]
        rows = [dict(zip(names, record, strict=True)) for record in cursor.fetchall()]
        cursor.execute(totals_sql, params)
        totals = dict(cursor.fetchall())
    return rows, totals


def with_recalled_episodes(rows: list[dict], recalled: list[dict], *, now: datetime, fade_days: int) -> list[dict]:
    """Issue 16: render's rows plus the episodes the question recalled, except those older than
    the fade window (they fade like notes, from when they were written)."""
    have = {str(row["id"]) for row in rows}
    oldest = now - timedelta(days=fade_days)
    extra = [
        {name: row[name] for name in RESULT_COLUMNS}
        for row in recalled
        if row["source_kind"] == "episode" and str(row["id"]) not in have and row["created_at"] >= oldest
    ]
    return rows + extra
