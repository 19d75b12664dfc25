"""`contextual` recall: the hybrid candidates and their neighbours in their place, read in one statement
and re-ranked by `memories.recall.ranking`."""

# What the statement reads, for the candidates and for the facts remembered just before and after each of
# them in the same place: cosine similarity to the question (current model only), the question's lexemes each
# holds, its length and `ts_rank`; for BM25, how many facts are recallable here (counted to a cap), and over a
# sample of them how long they are and how many hold each lexeme. A word absent from the sample counts as rare.
# The counts read the sample rather than the GIN index because under row-level security `@@` (not leakproof)
# cannot be an index condition: counting over the index would scan the whole tenant once per word.
#
# Neighbours obey the candidates' predicate (tenant, scope, liveness, agent, time filters), share the
# candidate's place, bucket and agent, and were written within `NEIGHBOUR_GAP` of it: never a fact this
# caller could not recall directly. Other apps add walks of their own (`register_neighbour_walk`).

from __future__ import annotations

import json
import operator
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.db import connection
from psycopg import postgres
from psycopg.pq import Format

from memories.db.predicates import live_sql, shown_in_turn_sql
from memories.models import SourceKind
from memories.recall import ranking
from memories.recall.asker import Asker
from memories.recall.candidates import (
    RESULT_COLUMNS,
    TSQUERY,
    RecallPlan,
    RecallRequest,
    by_key,
    candidate_ctes,
    reads_place_once,
    statement,
)
from memories.recall.standing import is_standing

# Candidates taken from the hybrid lists (each list offering as many) before
# re-ranking: quality is flat from 30 to 60 (docs/benchmarks.md, "Recall quality").
CANDIDATES = 40
NEIGHBOUR_GAP = timedelta(hours=1)
# Rows of the tenant's stream read on each side of a candidate to find its neighbours in its place.
# Small enough that the planner walks the newest-first index from the candidate
# (at 100 it chose a bitmap scan of the whole tenant instead: 12 ms at 419 rows).
NEIGHBOUR_SCAN = 30
TOTAL_CAP = 5_000
# Facts whose lengths and words stand for the tenant's in BM25's statistics.
STATISTICS_SAMPLE = 1_000

# A neighbour shares its anchor's place, bucket and agent.
SAME_PLACE = (
    "m.bucket = a.bucket AND m.scope = a.scope AND m.scope_ref = a.scope_ref"
    " AND m.agent_id IS NOT DISTINCT FROM a.agent_id"
)
# A tsvector cut down to the question's lexemes: deleting from it every lexeme that is not one.
_ONLY_QUESTION = "ts_delete({v}, tsvector_to_array(ts_delete({v}, qwords.words)))"


# BM25's sample and count over the table, newest first: the planner walks `memories_recall_recent_idx`
# and stops at the LIMIT. Unordered, it read the place by a bitmap of the whole tenant before the LIMIT
# applied (90 of the largest tenant's statement's milliseconds, at 134,072 rows).
NEWEST_FIRST = " ORDER BY m.created_at DESC"

# Planner settings for every contextual statement. A tenant without an HNSW index has small estimates
# (a few hundred rows, fewer still past the policies' filters), so without this the planner may read
# the rows before or after a candidate by bitmap and sort them, for each candidate and side, rather
# than walk the newest-first index, which gives them in order and stops after a few. A tenant with one
# reads BM25's sample and count from the table (`NEWEST_FIRST`), where the policies' filters make the
# planner expect a few hundred of the place's rows, so it read all of them by bitmap and sorted them
# rather than walk the index to the LIMIT (a tenant of 14,843 rows: 178 → 40 ms). Every other sort of
# the statement has no sort-free alternative and stays as it was; bitmap scans (the GIN index's, in
# `memories_word_list` too) and the HNSW index scan are untouched. Set before the statement, reset
# after it, so the rest of the request's transaction plans as before.
WALK_THE_INDEX = ("SET LOCAL enable_sort = off; ", "; SET LOCAL enable_sort TO DEFAULT")

# walk(request, tenant literal, recall predicate over `m`) -> a SELECT of (anchor, id, step) over the `anchor`
# CTE (its columns: see `_anchor_cte`), or None when it has nothing to walk for this request.
NeighbourWalk = Callable[[RecallRequest, str, str], "str | None"]

_neighbour_walks: dict[str, NeighbourWalk] = {}


def register_neighbour_walk(walk: NeighbourWalk, *, name: str) -> None:
    """Add neighbours another app knows of (threads: episodes in their events' order), without `memories`
    importing it; registered once by name from the app's `ready()`."""
    _neighbour_walks[name] = walk


def unregister_neighbour_walk(name: str) -> NeighbourWalk | None:
    return _neighbour_walks.pop(name, None)


def neighbour_walks() -> list[tuple[str, NeighbourWalk]]:
    """The registered walks in name order, so every statement lists them in the same order."""
    return sorted(_neighbour_walks.items())


def contextual_plan(request: RecallRequest, *, config: ranking.RankingConfig = ranking.DEFAULT_CONFIG) -> RecallPlan:
    """One statement: the hybrid candidates, their neighbours, and what ranking reads of each fact of the pool;
    the BM25 statistics and the neighbour links ride on the pool's first row."""
    found = candidate_ctes(request)
    ctes, params, base = found.ctes, found.params, found.base
    tenant = request.tenant_sql()
    params.update(
        question=request.question,
        candidates=CANDIDATES,
        gap=NEIGHBOUR_GAP,
        window=config.context_window if config.uses_context else 0,
        scan=NEIGHBOUR_SCAN,
        total_cap=TOTAL_CAP,
        sample=STATISTICS_SAMPLE,
    )
    statistics_rows = found.rows if reads_place_once(request) else found.rows + NEWEST_FIRST
    if "lexical" not in request.lists:  # the lexical list already defines the question's tsquery
        ctes.append(TSQUERY)
    neighbours = [_neighbours_written("before", tenant, base), _neighbours_written("after", tenant, base)]
    for _, walk in neighbour_walks():
        walked = walk(request, tenant, base)
        if walked:
            neighbours.append(walked)
    ctes += [
        _anchor_cte(tenant),
        "nb AS MATERIALIZED (\n  " + "\n  UNION ALL\n  ".join(neighbours) + "\n)",
        _POOL,
        _QWORDS,
        # Each sampled fact's lexemes without their positions too (`held`), read out of its row once: the
        # document frequencies test them once per word of the question, and a long fact's tsvector, kept
        # compressed or out of line, would be read back from TOAST for each test.
        f"sample AS MATERIALIZED (\n  SELECT m.search_vector, strip(m.search_vector) AS held"
        f" FROM {statistics_rows} LIMIT %(sample)s\n)",
        _bm25_cte(statistics_rows),
    ]
    chosen = _pool_rows(tenant, with_vector="semantic" in request.lists)
    return RecallPlan(
        sql=statement(ctes, chosen),
        params=params,
        lists=request.lists,
        hnsw_index=request.hnsw_index,
        planner_settings=WALK_THE_INDEX,
        preparable=request.tenant_is_a_parameter,
    )


def _anchor_cte(tenant: str) -> str:
    """The candidates, in the hybrid order, with what the neighbour walks need (a thread's walk starts from the
    anchor's own id, through its episode part) and the vector list's distance."""
    return (
        "anchor AS MATERIALIZED (\n"
        "  SELECT c.id, c.pin_rank, c.score, c.semantic_rank, c.lexical_rank, c.recent_rank, c.distance,\n"
        "    m.created_at, m.bucket, m.scope, m.scope_ref, m.agent_id, m.source_event_id\n"
        f"  FROM cand c JOIN memories_memory m ON m.id = c.id AND {by_key('cand')} AND m.organisation_id = {tenant}\n"
        f"    AND {shown_in_turn_sql('m')}\n"
        "  ORDER BY c.pin_rank IS NULL, c.pin_rank, c.score DESC NULLS LAST, m.created_at DESC, m.id\n"
        "  LIMIT %(candidates)s\n)"
    )


def _neighbours_written(direction: str, tenant: str, base: str) -> str:
    """Each anchor's neighbours in its place written just `before` or `after` it, within the gap."""
    before = direction == "before"
    cmp, order = ("<=", "DESC") if before else (">=", "ASC")
    bound = "w.created_at >= a.created_at - %(gap)s" if before else "w.created_at <= a.created_at + %(gap)s"
    sign = "-" if before else ""
    columns_read = ", ".join(f"w.{name}" for name in _NEIGHBOUR_COLUMNS)
    # The inner scan walks the tenant's newest-first index from the anchor
    # and stops after `scan` rows whatever the place, so a quiet channel in
    # a busy tenant costs no more than a busy one; the place and the recall
    # predicate are checked on those rows. The time gap bounds the inner scan
    # (the same rows pass as when it was checked after: those within the gap
    # come first): bounded on one side only, a small tenant's estimate fell
    # below `scan` rows and the planner read the tenant by bitmap and sorted it,
    # for each anchor and side. (The gap without the LIMIT lets it bitmap-scan the window.)
    return (
        f"SELECT a.id AS anchor, x.id, {sign}row_number() OVER (PARTITION BY a.id ORDER BY x.created_at {order},"
        f" x.id {order}) AS step\n"
        "  FROM anchor a CROSS JOIN LATERAL (\n"
        "    SELECT m.id, m.created_at FROM (\n"
        f"      SELECT {columns_read} FROM memories_memory w WHERE w.organisation_id = {tenant} AND {live_sql('w')}\n"
        f"        AND w.created_at {cmp} a.created_at AND {bound} AND w.id <> a.id\n"
        f"      ORDER BY w.created_at {order} LIMIT %(scan)s) m\n"
        f"    WHERE {base} AND {SAME_PLACE} AND {shown_in_turn_sql('m')}\n"
        f"    ORDER BY m.created_at {order}, m.id {order} LIMIT %(window)s) x"
    )


# Each fact once, a candidate with its ranks (grouped: a hash, where a join to anchor loops), numbered in
# the order the grouping gives them: ranking sums scores in that order, so the pool is ranked in it however
# the final join returns its rows (a float sum's last digit depends on the order of its terms).
_POOL = (
    "pool AS (\n"
    "  SELECT *, row_number() OVER () AS pool_order FROM (\n"
    "    SELECT id, min(pin_rank) AS pin_rank, min(semantic_rank) AS semantic_rank,\n"
    "      min(lexical_rank) AS lexical_rank, min(recent_rank) AS recent_rank, min(distance) AS distance FROM (\n"
    "      SELECT id, pin_rank, semantic_rank, lexical_rank, recent_rank, distance FROM anchor\n"
    "      UNION ALL SELECT id, NULL, NULL, NULL, NULL, NULL FROM nb) u GROUP BY id) grouped\n)"
)
_QWORDS = (
    "qwords AS (SELECT coalesce(array_agg(DISTINCT lexeme), '{}') AS words"
    " FROM unnest(to_tsvector('english', %(question)s)))"
)


def _bm25_cte(rows: str) -> str:
    """BM25's statistics over the sample (the tenant counted to a cap beyond it), and the neighbour links."""
    return (
        "bm25 AS MATERIALIZED (\n"
        "  SELECT sampled, CASE WHEN sampled < %(sample)s THEN sampled ELSE (\n"
        f"      SELECT count(*) FROM (SELECT 1 FROM {rows} LIMIT %(total_cap)s) t)\n"
        "    END AS total,\n"
        "    (SELECT avg(length(search_vector)) FROM sample) AS average_length,\n"
        # Only facts holding some word of the question are looked into; a fact holds a word when deleting
        # it shortens its lexemes (cheaper than listing all of them to pick the question's).
        "    (SELECT coalesce(jsonb_object_agg(d.lexeme, d.n), '{}') FROM (\n"
        "       SELECT u AS lexeme, count(*) AS n FROM sample s CROSS JOIN tsq CROSS JOIN qwords,\n"
        "         unnest(qwords.words) u WHERE s.search_vector @@ tsq.query\n"
        "         AND length(ts_delete(s.held, u)) < length(s.held)\n"
        "       GROUP BY u) d) AS document_frequency,\n"
        "    (SELECT coalesce(jsonb_agg(jsonb_build_array(anchor, id, step)), '[]') FROM nb) AS links\n"
        "  FROM (SELECT count(*) AS sampled FROM sample) n\n)"
    )


# What a recall row shows of a fact rides on every row of the pool, so the few that win need no second
# read. Their times come as text and are loaded for the winners only: loading a time is the costly part.
_TIMES = ("created_at", "occurred_at", "expires_at")
_WINNER_COLUMNS = ", ".join(
    f"m.{name}::text AS {name}" if name in _TIMES else f"m.{name}"
    for name in RESULT_COLUMNS
    if name not in ("id", "body")  # read already
)


def _pool_rows(tenant: str, *, with_vector: bool) -> str:
    """What ranking reads of each fact of the pool; the statistics and the neighbour links on the pool's first row."""
    # A candidate the vector list found comes with its distance (the same comparison): only the others'
    # vectors are read again, and compared.
    similarity = (
        "CASE WHEN pool.distance IS NOT NULL THEN 1 - pool.distance"
        " WHEN m.embedding IS NOT NULL AND m.embedding_model = %(model)s"
        " THEN 1 - (m.embedding <=> %(qvec)s::halfvec) END"
        if with_vector
        else "NULL::float8"
    )
    return (
        # When it happened, as seconds since the epoch: a float loads in C, a time in Python, and the
        # date cue reads it for every row of the pool (a double keeps the microseconds at these magnitudes).
        "  SELECT m.id::text AS id, m.body, extract(epoch FROM coalesce(m.occurred_at, m.created_at))::float8"
        " AS happened,\n"
        f"    {_WINNER_COLUMNS},\n"
        f"    {similarity} AS similarity, length(m.search_vector) AS length,\n"
        "    ts_rank(m.search_vector, tsq.query) AS ts_rank,\n"
        f"    CASE WHEN m.search_vector @@ tsq.query THEN {_ONLY_QUESTION.format(v='m.search_vector')}::text END"
        " AS lexemes,\n"
        "    pool.pin_rank, pool.semantic_rank, pool.lexical_rank, pool.recent_rank, pool.pool_order,\n"
        # The statistics read once, by a subquery for the row that carries them, not joined to every row.
        "    CASE WHEN pool.pool_order = 1 THEN (SELECT jsonb_build_array(b.sampled, b.total,"
        " b.average_length, b.document_frequency, b.links) FROM bm25 b) END AS bm25\n"
        f"  FROM pool JOIN memories_memory m ON m.id = pool.id AND m.organisation_id = {tenant}\n"
        "    CROSS JOIN tsq CROSS JOIN qwords"
    )


def _as_json(value):
    return json.loads(value) if isinstance(value, str) else value


# A lexeme of a tsvector's text form and its positions: 'word':3,7B. Quotes are doubled, backslashes too.
_TSVECTOR_ENTRY = re.compile(r"'((?:[^']|'')*)'(?::([0-9A-D,]+))?")


def lexeme_counts(tsvector_text: str | None) -> dict[str, int]:
    """How many times each lexeme occurs, from a tsvector's text form (`'camp':5,9 'melani':1`)."""
    counts: dict[str, int] = {}
    if not tsvector_text:  # most of the pool holds no word of the question
        return counts
    for match in _TSVECTOR_ENTRY.finditer(tsvector_text):
        lexeme = _unquoted(match[1])
        counts[lexeme] = match[2].count(",") + 1 if match[2] else 1
    return counts


# A lexeme whose first position is 1 (positions are printed in ascending order, each with an optional weight).
_OPENING_ENTRY = re.compile(r"'((?:[^']|'')*)':1[A-D]?(?=[, ]|$)")


def opening_lexeme(tsvector_text: str | None) -> str | None:
    """The lexeme at a tsvector's first position (a transcript line's speaker label), if any."""
    match = _OPENING_ENTRY.search(tsvector_text) if tsvector_text else None
    return _unquoted(match[1]) if match else None


def _unquoted(lexeme: str) -> str:
    """A lexeme as a tsvector's text form quotes it: quotes and backslashes doubled."""
    return lexeme.replace("''", "'").replace("\\\\", "\\")


def _link_neighbours(candidates: dict[str, ranking.RankedRow], links: dict[str, list[tuple[str, int]]]) -> None:
    """Offsets between every two facts of one anchor's window, both ways, so a neighbour sees its anchor too.
    A pair met in two windows is listed twice: a fact takes the best its neighbours lend, which a repeat
    leaves as it is, and listing is cheaper than checking for it (a contextual recall links about a
    thousand pairs)."""
    for anchor, steps in links.items():
        window = [(anchor, 0), *steps]
        for first, first_step in window:
            candidate = candidates.get(first)
            if candidate is not None:
                candidate.neighbours.extend(
                    (second, second_step - first_step) for second, second_step in window if second != first
                )


def rank_rows(
    rows: list[dict],
    *,
    question: str,
    limit: int,
    config: ranking.RankingConfig = ranking.DEFAULT_CONFIG,
    asker: Asker | None = None,
) -> list[dict]:
    """The contextual statement's rows, ranked; pinned facts stay first. Returns full recall rows.
    `asker`: the one person the place names, whose facts a first-person question prefers."""
    if not rows:
        return rows
    document_frequency, total, average_length, links = _statistics(rows)
    by_id = {str(row["id"]): row for row in sorted(rows, key=_POOL_ORDER)}
    candidates = {key: _candidate(key, row, asker) for key, row in by_id.items()}
    _link_neighbours(candidates, links)
    # A word the sample missed is as rare as a word can be here: one fact.
    for candidate in candidates.values():
        for lexeme in candidate.lexeme_counts:
            document_frequency.setdefault(lexeme, 1)
    ordered = ranking.rank(
        list(candidates.values()),
        cues=ranking.analyse_question(question),
        document_frequency=document_frequency,
        total=total,
        average_length=average_length,
        config=config,
    )
    pinned = sorted((c for c in ordered if by_id[c.id]["pin_rank"] is not None), key=lambda c: by_id[c.id]["pin_rank"])
    rest = [c for c in ordered if by_id[c.id]["pin_rank"] is None][: max(0, limit - len(pinned))]
    load_time = _time_loader()
    newer: dict[str, str] = {}
    if config.newer_first:
        for candidate in rest:
            if candidate.by_asker:  # the rule orders only the asker's own facts: only theirs need the time
                candidate.written = load_time(by_id[candidate.id]["created_at"])
        newer = ranking.newer_first(rest)
    return [
        _recall_row(by_id[candidate.id], candidate, load_time, newer.get(candidate.id))
        for candidate in (pinned + rest)[:limit]
    ]


_POOL_ORDER = operator.itemgetter("pool_order")


def _statistics(rows: list[dict]) -> tuple[dict[str, int], int, float, dict[str, list[tuple[str, int]]]]:
    """What the pool's first row carries: document frequencies (scaled to the tenant), the tenant's size,
    its average length, and each anchor's neighbours with their steps."""
    sampled, total, average_length, sampled_frequency, steps = next(
        _as_json(row["bm25"]) for row in rows if row["bm25"] is not None
    )
    # Counted in the sample and scaled to the tenant, so a word keeps its share.
    scale = total / sampled if sampled else 1.0
    document_frequency = {lexeme: max(1, round(int(count) * scale)) for lexeme, count in sampled_frequency.items()}
    links: dict[str, list[tuple[str, int]]] = {}
    for anchor, other, step in steps:
        links.setdefault(str(anchor), []).append((str(other), int(step)))
    return document_frequency, int(total or 0), float(average_length or 0), links


def _candidate(key: str, row: dict, asker: Asker | None = None) -> ranking.RankedRow:
    body, source_kind = row["body"], row["source_kind"]
    return ranking.RankedRow(
        id=key,
        body=body,
        when=datetime.fromtimestamp(row["happened"], UTC),
        similarity=row["similarity"],
        lexeme_counts=lexeme_counts(row["lexemes"]),
        label_lexeme=opening_lexeme(row["lexemes"]),  # the label's when the row has one (`ranking.rank` checks)
        length=float(row["length"] or 0),
        ts_rank=float(row["ts_rank"] or 0),
        by_asker=asker is not None
        and asker.owns(
            body=body, source_kind=source_kind, subject_type=row["subject_type"], subject_id=row["subject_id"]
        ),
        standing=is_standing(body=body, source_kind=source_kind),
        # The parts of one message are episodes sharing its event's reference; other facts that share a
        # reference (several remembered from one conversation) are each their own.
        source=row["source_ref"] if source_kind == SourceKind.EPISODE else "",
    )


def _recall_row(
    found: dict, candidate: ranking.RankedRow, load_time: Callable[[str], datetime], newer: str | None = None
) -> dict:
    """A recall row: the fact's columns (as a read of the table gives them), its hybrid ranks, its contextual score,
    and the newer result on the same matter listed above it, if any (`ranking.newer_first`)."""
    row = {name: found[name] for name in RESULT_COLUMNS}
    row["id"] = uuid.UUID(found["id"])
    for name in _TIMES:
        row[name] = None if found[name] is None else load_time(found[name])
    row.update(
        pin_rank=found["pin_rank"],
        score=candidate.score,
        semantic_rank=found["semantic_rank"],
        lexical_rank=found["lexical_rank"],
        recent_rank=found["recent_rank"],
        distance=None if candidate.similarity is None else 1 - candidate.similarity,
        newer=None if newer is None else uuid.UUID(newer),
    )
    return row


def _time_loader() -> Callable[[str], datetime]:
    """A `timestamptz` in text form loaded as this connection's cursors load one (Django's time zone)."""
    oid = postgres.types["timestamptz"].oid
    with connection.cursor() as cursor:
        raw = cursor.cursor
        loader = raw.adapters.get_loader(oid, Format.TEXT)(oid, raw)
    return lambda text: loader.load(text.encode())


# What the recall predicate and the place test read of a neighbour.
_NEIGHBOUR_COLUMNS = (
    "id",
    "organisation_id",
    "created_at",
    "occurred_at",
    "expires_at",
    "bucket",
    "scope",
    "scope_ref",
    "agent_id",
    "stance",
    "redacted_at",
    "superseded_by_id",
    # and what `shown_in_turn_sql` reads
    "quarantined_at",
)


def plan_described(config: ranking.RankingConfig) -> dict:
    """What `ranking` reports for a contextual recall."""
    return {
        "candidates": CANDIDATES,
        "lexical": f"BM25 (k1={config.k1}, b={config.b})" if config.bm25 else "ts_rank",
        "fusion": f"z-scores, lexical weight {config.lexical_weight}"
        if config.zscore_fusion
        else f"reciprocal rank, k={config.rrf_k}",
        "context": f"neighbours within {config.context_window} in the same place, weight {config.context_weight}"
        f" ({config.context_turn_weight} for a person's turn), lift {config.context_lift}"
        if config.uses_context
        else None,
        "cues": [
            name
            for name, weight in (
                ("speaker", config.speaker_boost),
                ("date", config.date_boost),
                ("asker", config.asker_boost),
                ("standing", config.standing_rank),
            )
            if weight
        ],
    }
