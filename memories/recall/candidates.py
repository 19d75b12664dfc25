"""The candidate statement of a recall: which rows it may return, and the ranked lists that offer them.
Built without touching the database."""

# The rules every recall statement shares:
# - the tenant predicate is a literal (`organisation_id = '…'::uuid`), so the planner sees the tenant at plan
#   time and can use that tenant's partial HNSW index (a bound parameter under a generic plan would not);
# - the scope predicate is `scopes.recallable` as SQL: workspace rows, this channel's rows, and this person's
#   rows only in a DM with exactly them;
# - erased, expired, corrected (superseded) and system rows, and promotion tombstones, never match
#   (`memories.db.predicates`); vectors are compared only with vectors of the current embedding model.
# The ranked lists (`semantic`, `lexical`, `recent`) are fused by reciprocal rank, pinned facts first;
# `memories.recall.contextual` reads the same candidates and re-ranks them.
#
# When the vector list is exact (no HNSW index) and the word list is asked for too, both would read every
# recallable row of the place, and so would the pinned list and the unembedded count: the place's rows are
# then read once (`place`, one scan under row-level security) and every list reads that. With an HNSW index
# the vector list reads the index and the other lists read the table, bounded by their own indexes: the word
# list through `memories_word_list` (the GIN index, which an inline `@@` cannot use under the policies), the
# unembedded and other-model counts over their partial indexes. Candidates' rows are found by key (`by_key`),
# never by hashing the tenant's rows.

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from memories.db.predicates import TURN_TIMES, audience_sql, held_or_shared_sql, live_sql, readable_sql, recallable_sql
from memories.scopes import Place, scope_for, solo_person

RRF_K = 60
# Rows each ranked list contributes before fusion: enough that a fact ranked
# modestly by both lists can still win, few enough to keep the sort small.
POOL_MIN = 30
POOL_PER_RESULT = 3
UNEMBEDDED_COUNT_CAP = 1000

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


def result_columns(alias: str = "m") -> str:
    """`RESULT_COLUMNS` of `alias` as a select list, and `unreadable`: a row whose times are past the write rules'
    bound (written around the database's CHECK) comes without them, to be skipped and logged, never loaded."""
    readable = readable_sql(alias, TURN_TIMES)
    columns = [
        f"CASE WHEN {readable} THEN {alias}.{name} END AS {name}" if name in TURN_TIMES else f"{alias}.{name}"
        for name in RESULT_COLUMNS
    ]
    return ", ".join([*columns, f"NOT ({readable}) AS unreadable"])


def not_quarantined(alias: str = "m") -> str:
    """A quarantined row (kept from before a write rule held) is never recalled or rendered."""
    return f"{alias}.quarantined_at IS NULL"


@dataclass(frozen=True, kw_only=True)
class RecallRequest:
    """What one recall statement asks for: whose rows, seen from where, by which ranked lists, how many."""

    organisation_id: uuid.UUID | str
    place: Place
    agent_id: uuid.UUID | str | None = None
    limit: int
    lists: tuple[str, ...]
    question: str = ""
    query_vector: list[float] | None = None
    model: str = ""
    now: datetime
    hnsw_index: str | None = None
    count_unembedded: bool = False
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    # Rows each ranked list offers; by default a few per result asked for.
    pool: int | None = None
    # Read the place's rows once for every list (`place`); None: whenever the lists would each read all of them.
    shared_read: bool | None = None
    # The nearest profile facts of the place's own scope (its channel's, or its one person's) offered beside the
    # lists: a standing instruction or preference a request needs may share few of its words.
    own_profile: int = 0
    # Name the tenant by a parameter rather than a literal, so the statement's text is every tenant's and it can be
    # prepared once per database session and planned once (`query.run_plan`). Only without an HNSW index: the
    # partial index is proven from the literal (`tenant_sql`).
    bound_tenant: bool = False

    @property
    def tenant_is_a_parameter(self) -> bool:
        """Whether the statement names the tenant by `%(tenant)s`: bound, and no HNSW index to prove."""
        return self.bound_tenant and not self.hnsw_index

    def tenant_sql(self) -> str:
        """The tenant as the statement names it: the parameter (`tenant_is_a_parameter`), else its literal."""
        return TENANT_PARAMETER if self.tenant_is_a_parameter else tenant_literal(self.organisation_id)


@dataclass(frozen=True)
class RecallPlan:
    """One recall as SQL: the statement, its parameters and what it uses."""

    sql: str
    params: dict
    lists: tuple[str, ...]
    hnsw_index: str | None
    # Planner settings set just before the statement and reset just after it (`query.run_plan`).
    planner_settings: tuple[str, str] = ("", "")
    # The tenant is a parameter: the same text for every tenant, so it may be prepared (`RecallRequest.bound_tenant`).
    preparable: bool = False


TENANT_PARAMETER = "%(tenant)s::uuid"


def tenant_literal(organisation_id) -> str:
    """The tenant as a SQL literal. Only a parsed UUID is ever formatted, so nothing else can reach the SQL."""
    return f"'{uuid.UUID(str(organisation_id))}'::uuid"


def base_predicate(
    *, organisation_id, place: Place, agent_id, alias: str = "m", scopes_sql: str | None = None, tenant: str = ""
) -> str:
    """Rows recallable in `place` for this principal, as SQL over `alias` (parameters: now, channel, person, agent;
    `tenant` is how the SQL names the organisation, by default its literal)."""
    a = alias
    if scopes_sql is None:
        scopes_sql = audience_sql(place, alias)
    sql = (
        f"{a}.organisation_id = {tenant or tenant_literal(organisation_id)} AND {recallable_sql(a)}"
        f" AND {a}.expires_at > %(now)s AND ({scopes_sql})"
    )
    if agent_id is not None:
        # An agent recalls what it holds and what the organisation's agents share.
        sql += f" AND {held_or_shared_sql(a)}"
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


def place_params(*, place: Place, agent_id, now: datetime) -> dict:
    """The parameters `base_predicate` names."""
    return {
        "now": now,
        "channel": place.channel,
        "person": solo_person(place) or "",
        "agent": str(agent_id) if agent_id is not None else None,
    }


def recall_predicate(request: RecallRequest, *, include_workspace: bool = True) -> str:
    """The rows this request may return (`base_predicate` and its time filters), over `m`."""
    scopes_sql = audience_sql(request.place, include_workspace=include_workspace)
    return base_predicate(
        organisation_id=request.organisation_id,
        place=request.place,
        agent_id=request.agent_id,
        scopes_sql=scopes_sql,
        tenant=request.tenant_sql(),
    ) + time_predicate(occurred_after=request.occurred_after, occurred_before=request.occurred_before)


# The question's words, each quoted as a lexeme and joined with OR, so a fact
# matching some of them ranks (plainto_tsquery would demand all of them).
TSQUERY = r"""tsq AS (
  SELECT to_tsquery('simple', coalesce(string_agg(
    '''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''', ' | '), '')) AS query
  FROM unnest(to_tsvector('english', %(question)s))
)"""


def by_key(cte: str, alias: str = "m") -> str:
    """`alias`'s rows that are `cte`'s, found by their primary key: the ids as one array, so the planner
    looks each up rather than hashing every row of the tenant to join them (a join on
    `m.id = c.id` alone read all 134,072 rows of the largest tenant; a `LATERAL` per id became a bitmap
    scan of the tenant per id under the policies)."""
    return f"{alias}.id = ANY(ARRAY(SELECT id FROM {cte}))"


def statement(ctes: list[str], chosen: str) -> str:
    """The common table expressions, then the `chosen` rows beside `stats`: one row even when none is chosen."""
    return (
        "WITH " + ",\n".join(ctes) + "\n"
        "SELECT r.*, stats.vec_n, stats.unembedded FROM stats LEFT JOIN LATERAL (\n" + chosen + "\n) r ON true"
    )


def candidates_plan(request: RecallRequest) -> RecallPlan:
    """The recall statement for the request's ranked lists (`semantic`, `lexical`, `recent`), pinned facts first."""
    found = candidate_ctes(request)
    ranks = ", ".join(f"c.{name}" for name in RANK_COLUMNS)
    chosen = (
        f"  SELECT {result_columns()}, {ranks} FROM cand c JOIN memories_memory m\n"
        f"    ON m.id = c.id AND {by_key('cand')} AND m.organisation_id = {request.tenant_sql()}"
        f" AND {not_quarantined()}\n"
        "  ORDER BY c.pin_rank IS NULL, c.pin_rank, c.score DESC NULLS LAST, m.created_at DESC, m.id\n"
        "  LIMIT %(limit)s"
    )
    return RecallPlan(
        sql=statement(found.ctes, chosen),
        params=found.params,
        lists=request.lists,
        hnsw_index=request.hnsw_index,
        preparable=request.tenant_is_a_parameter,
    )


def reads_place_once(request: RecallRequest) -> bool:
    """Whether the lists read the place's rows from one shared read (`place`) rather than each from the table.

    By default when the vector list is exact and the word list is asked for: each would read every row anyway.
    """
    if request.shared_read is not None:
        return request.shared_read and "semantic" in request.lists
    return request.hnsw_index is None and {"semantic", "lexical"} <= set(request.lists)


@dataclass(frozen=True)
class CandidateCtes:
    """A recall's common table expressions, their parameters, the recall predicate over `m`, and
    where the place's recallable rows are read (`rows`: a FROM item and its condition, alias `m`)."""

    ctes: list[str]
    params: dict
    base: str
    rows: str


def candidate_ctes(request: RecallRequest) -> CandidateCtes:
    """The common table expressions of a recall, their parameters, and the recall predicate they share.

    `cand` holds every candidate with its fused score and ranks (pinned facts
    with their pin rank), `stats` what the vector list held and how many rows
    here are not embedded yet; the statement that ends them chooses the rows.
    """
    base = recall_predicate(request)
    shared = reads_place_once(request)
    rows = "place m WHERE true" if shared else f"memories_memory m WHERE {base}"
    params = {
        **place_params(place=request.place, agent_id=request.agent_id, now=request.now),
        "limit": request.limit,
        "pool": request.pool or max(POOL_MIN, request.limit * POOL_PER_RESULT),
        "rrf_k": RRF_K,
        "occurred_after": request.occurred_after,
        "occurred_before": request.occurred_before,
    }
    if request.tenant_is_a_parameter:
        params["tenant"] = str(uuid.UUID(str(request.organisation_id)))
    ctes: list[str] = [_place_cte(base)] if shared else []
    ranked: list[str] = []
    if "semantic" in request.lists:
        params.update(_vector_params(request))
        ctes += _vector_ctes(request, base, rows if shared else None)
        ranked.append("SELECT id, rank, 'semantic' AS list, distance FROM vec")
    if "lexical" in request.lists:
        params["question"] = request.question
        ctes += [TSQUERY, _lexical_cte(rows, through_function=not shared)]
        ranked.append("SELECT id, rank, 'lexical' AS list, NULL::float8 AS distance FROM lex")
    if request.own_profile and "semantic" in request.lists:
        own = scope_for(request.place)
        params.update(own_scope=own.scope, own_ref=own.ref, own_profile=request.own_profile)
        ctes.append(_own_profile_cte(base, rows if shared else None))
        ranked.append("SELECT id, rank, 'profile' AS list, distance FROM prof")
    if "recent" in request.lists:
        ctes.append(_newest_cte("rec", rows, limit="pool"))
        ranked.append("SELECT id, rank, 'recent' AS list, NULL::float8 AS distance FROM rec")
    ctes += [_newest_cte("pins", rows + " AND m.pinned", limit="limit"), _fused_cte(ranked), _CAND]
    ctes.append(_shared_stats_cte(request) if shared else _stats_cte(request, base))
    return CandidateCtes(ctes=ctes, params=params, base=base, rows=rows)


def _place_cte(base: str) -> str:
    """The place's recallable rows, read once, with what every list reads of them: the distance of a
    vector of the current model to the question, the tsvector, and whether the row is embedded at all."""
    return (
        "place AS MATERIALIZED (\n"
        "  SELECT m.id, m.created_at, m.pinned, m.search_vector, m.embedding IS NULL AS unembedded,\n"
        "    m.scope, m.scope_ref, m.tier,\n"
        "    CASE WHEN m.embedding IS NOT NULL AND m.embedding_model = %(model)s"
        " THEN m.embedding <=> %(qvec)s::halfvec END AS distance\n"
        f"  FROM memories_memory m WHERE {base}\n)"
    )


def _vector_params(request: RecallRequest) -> dict:
    assert request.query_vector is not None  # the semantic list is asked for only with a question vector
    params: dict[str, object] = {
        "qvec": "[" + ",".join(f"{value:.7g}" for value in request.query_vector) + "]",
        "model": request.model,
    }
    if request.hnsw_index:
        params["ef"] = settings.MEMORY_VECTOR_EF_SEARCH
    return params


def _vector_ctes(request: RecallRequest, base: str, shared_rows: str | None) -> list[str]:
    """`vec`: the nearest rows by cosine distance, exactly (from the shared read when there is one),
    or from the tenant's HNSW index (`wcand`)."""
    if shared_rows is not None:
        ctes = []
        source = f"SELECT m.id, m.distance FROM {shared_rows} AND m.distance IS NOT NULL ORDER BY 2, 1 LIMIT %(pool)s"
    elif request.hnsw_index:
        ctes = [_hnsw_candidates_cte(request.organisation_id)]
        source = _hnsw_vector_source(request, base)
    else:
        ctes = []
        source = (
            "SELECT m.id, m.embedding <=> %(qvec)s::halfvec AS distance FROM memories_memory m\n"
            f"    WHERE {base} AND m.embedding IS NOT NULL AND m.embedding_model = %(model)s\n"
            "    ORDER BY 2 LIMIT %(pool)s"
        )
    ctes.append(
        "vec AS MATERIALIZED (\n"
        "  SELECT id, distance, row_number() OVER (ORDER BY distance, id) AS rank\n"
        f"  FROM ({source}) s ORDER BY distance, id LIMIT %(pool)s\n)"
    )
    return ctes


def _own_profile_cte(base: str, shared_rows: str | None) -> str:
    """`prof`: the profile facts of the place's own scope nearest the question (from the shared read when
    there is one), under the recall predicate like every list."""
    own = "m.scope = %(own_scope)s AND m.scope_ref = %(own_ref)s AND m.tier = 'profile'"
    if shared_rows is not None:
        source = f"SELECT m.id, m.distance FROM {shared_rows} AND {own} AND m.distance IS NOT NULL"
    else:
        source = (
            "SELECT m.id, m.embedding <=> %(qvec)s::halfvec AS distance FROM memories_memory m\n"
            f"    WHERE {base} AND {own} AND m.embedding IS NOT NULL AND m.embedding_model = %(model)s"
        )
    return (
        "prof AS MATERIALIZED (\n"
        "  SELECT id, distance, row_number() OVER (ORDER BY distance, id) AS rank\n"
        f"  FROM ({source} ORDER BY 2, 1 LIMIT %(own_profile)s) s\n)"
    )


def _hnsw_candidates_cte(organisation_id) -> str:
    # The partial index's own predicate, literally, so the planner can prove it applies;
    # the other filters are checked on the candidates it returns.
    return (
        "wcand AS MATERIALIZED (\n"
        "  SELECT w.id, w.embedding <=> %(qvec)s::halfvec AS distance FROM memories_memory w\n"
        f"  WHERE w.organisation_id = {tenant_literal(organisation_id)} AND w.scope = 'workspace'"
        f" AND {live_sql('w')} AND w.embedding IS NOT NULL\n"
        "  ORDER BY w.embedding <=> %(qvec)s::halfvec LIMIT %(ef)s\n)"
    )


def _hnsw_vector_source(request: RecallRequest, base: str) -> str:
    """The index's workspace candidates that pass the filters, and the nearest channel and person rows exactly."""
    narrow = recall_predicate(request, include_workspace=False)
    return (
        "(SELECT c.id, c.distance FROM wcand c JOIN memories_memory m ON m.id = c.id\n"
        f"    WHERE {base} AND m.embedding_model = %(model)s)\n"
        "  UNION ALL\n"
        "  (SELECT m.id, m.embedding <=> %(qvec)s::halfvec AS distance FROM memories_memory m\n"
        f"    WHERE {narrow} AND m.embedding IS NOT NULL AND m.embedding_model = %(model)s\n"
        "    ORDER BY 2 LIMIT %(pool)s)"
    )


def _lexical_cte(rows: str, *, through_function: bool = False) -> str:
    """`lex`: the rows holding a word of the question, by `ts_rank`; `rows` is where the place's rows are read.

    `through_function` (the table, not the shared read): from `memories_word_list` (memories/db/indexes.py),
    which applies the tenant of the transaction's setting and the rest of `base_predicate` itself, so the
    GIN index serves `@@`, which under row-level security it cannot (`@@` is not leakproof: the word list
    read every row of the place). The function needs that setting; a caller without one (the
    owner in a job, to which no policy applies) gets the same list inline, in a branch the setting gates.
    """
    table, where = rows.split(" WHERE ", 1)
    if through_function:
        where = f"archivist_tenant() IS NULL AND {where}"
    source = (
        "SELECT m.id, ts_rank(m.search_vector, tsq.query) AS score, m.created_at\n"
        f"    FROM {table}, tsq WHERE {where} AND m.search_vector @@ tsq.query\n"
        "    ORDER BY score DESC, m.created_at DESC LIMIT %(pool)s"
    )
    if through_function:
        source = f"{_WORD_LIST}\n    UNION ALL\n    ({source})"
    return (
        "lex AS MATERIALIZED (\n"
        "  SELECT id, row_number() OVER (ORDER BY score DESC, created_at DESC, id) AS rank FROM (\n"
        f"    {source}) s\n)"
    )


# The word list of the tenant the transaction names, in the same order; nothing without one.
_WORD_LIST = (
    "SELECT w.id, w.score, w.created_at FROM tsq, memories_word_list(tsq.query, %(now)s::timestamptz,"
    " %(channel)s::text, nullif(%(person)s::text, ''), %(agent)s::uuid, %(occurred_after)s::timestamptz,"
    " %(occurred_before)s::timestamptz, %(pool)s::integer) w"
)


def _newest_cte(name: str, rows: str, *, limit: str) -> str:
    """The newest of `rows` (a FROM item and its condition), ranked, at most the parameter `limit` of them."""
    return (
        f"{name} AS MATERIALIZED (\n"
        "  SELECT m.id, row_number() OVER (ORDER BY m.created_at DESC, m.id DESC) AS rank\n"
        f"  FROM {rows}\n"
        f"  ORDER BY m.created_at DESC, m.id DESC LIMIT %({limit})s\n)"
    )


def _fused_cte(ranked: list[str]) -> str:
    """Each candidate's reciprocal-rank score over the ranked lists, and its rank in each."""
    union = "\n  UNION ALL ".join(ranked) if ranked else "SELECT NULL::uuid, NULL::bigint, NULL::text, NULL::float8"
    return (
        "fused AS (\n"
        "  SELECT id, sum(1.0::float8 / (%(rrf_k)s + rank)) AS score,\n"
        "    min(rank) FILTER (WHERE list = 'semantic') AS semantic_rank,\n"
        "    min(rank) FILTER (WHERE list = 'lexical') AS lexical_rank,\n"
        "    min(rank) FILTER (WHERE list = 'recent') AS recent_rank,\n"
        "    min(distance) AS distance\n"
        f"  FROM ({union}) u WHERE id IS NOT NULL GROUP BY id\n)"
    )


# The fused candidates and the pinned facts, each once.
_CAND = (
    "cand AS (\n"
    "  SELECT coalesce(f.id, p.id) AS id, p.rank AS pin_rank, f.score, f.semantic_rank, f.lexical_rank,\n"
    "    f.recent_rank, f.distance\n"
    "  FROM fused f FULL OUTER JOIN pins p ON p.id = f.id\n)"
)


def _stats_cte(request: RecallRequest, base: str) -> str:
    """How many rows the vector list held, and (when asked) how many rows here cannot be searched by meaning."""
    stats = ["(SELECT count(*) FROM vec) AS vec_n" if "semantic" in request.lists else "NULL::bigint AS vec_n"]
    if request.count_unembedded:
        stats.append(
            "(SELECT count(*) FROM (SELECT 1 FROM memories_memory m WHERE "
            f"{base} AND m.embedding IS NULL LIMIT {UNEMBEDDED_COUNT_CAP}) n)"
            # A vector of another embedding model cannot be compared: such a row is not searchable yet either.
            # Below and above the current model rather than `<>`, so `memories_recall_model_idx` ranges over
            # both sides and finding none reads no row.
            " + (SELECT count(*) FROM (SELECT 1 FROM memories_memory m WHERE "
            f"{base} AND m.embedding IS NOT NULL"
            " AND (m.embedding_model < %(model)s OR m.embedding_model > %(model)s)"
            f" LIMIT {UNEMBEDDED_COUNT_CAP}) o)"
            " AS unembedded"
        )
    else:
        stats.append("NULL::bigint AS unembedded")
    return "stats AS (SELECT " + ", ".join(stats) + ")"


def _shared_stats_cte(request: RecallRequest) -> str:
    """`_stats_cte`'s counts over the shared read: not embedded, and embedded by another model (no distance)."""
    unembedded = "NULL::bigint AS unembedded"
    if request.count_unembedded:
        unembedded = (
            f"(SELECT least(count(*) FILTER (WHERE m.unembedded), {UNEMBEDDED_COUNT_CAP})"
            f" + least(count(*) FILTER (WHERE NOT m.unembedded AND m.distance IS NULL), {UNEMBEDDED_COUNT_CAP})"
            " FROM place m) AS unembedded"
        )
    return f"stats AS (SELECT (SELECT count(*) FROM vec) AS vec_n, {unembedded})"
