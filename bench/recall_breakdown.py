"""Where a default (contextual) recall's time goes outside the embedding, and the code before against now (issue 15).

    HF_HUB_OFFLINE=1 ARCHIVIST_LOCOMO=/work/shared/data/locomo-dev.json .venv/bin/python bench/recall_breakdown.py

Seeds the LoCoMo dev conversations as `bench/contextual_statement.py` does (one
organisation each, every turn a fact of one private channel, embedded by the
real model), then asks every category 1-4 question through
`memories.recall.query.recall` in process, mode `auto` (the API's default),
limit 10, as the web role `archivist_app` with the tenant set in the
transaction, exactly as a request runs it. The question's vector is computed
before the run and handed back by the embedder, so what is timed is the call
outside the embedding.

Two versions of `memories/recall/{candidates,ranking,contextual,query}.py` run
alternately question by question in this one process: the baseline's
(`--baseline`, by default the commit this branch started from, read with
`git show`) and the checkout's. Printed: first the planning and execution
p50 of each version's statement by `EXPLAIN (ANALYZE, TIMING OFF)` over
`--explain` questions, the two alternating; then p50/p95 of each, the median of the
per-question ratios, how many questions gave the same ranked top 10 rows
(every column equal) and their hit@5/hit@10 against the questions' evidence;
then wall-clock sections of each version (the plan, the statement, the
ranking, the second read, when the version has one) and a cProfile of the
checkout's code over the first `--profile` questions. The load average is
printed beside the figures. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import re
import statistics
import subprocess
import sys
import time
import types
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
DATABASE = "archivist_breakdown"
MODULES = ("candidates", "ranking", "contextual", "query")
# The imports of one recall module by another, replaced in the baseline's text by its own modules.
_INTERNAL_IMPORTS = {
    "contextual": ("from memories.recall import ranking\n", ""),
    "query": ("from memories.recall import contextual, ranking, reranker\n", "from memories.recall import reranker\n"),
}
# What the sections time, wherever a version defines it: (module, function).
SECTIONS = (
    ("contextual", "contextual_plan"),
    ("contextual", "build_plan"),
    ("query", "run_plan"),
    ("contextual", "rank_rows"),
    ("contextual", "_rows_by_id"),
    ("ranking", "rank"),
)


def arguments() -> argparse.Namespace:
    from quality import DEFAULT_DATA

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo JSON file")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "var" / "bench-breakdown")
    parser.add_argument("--questions", type=int, default=0, help="questions per conversation (0: all)")
    parser.add_argument("--rounds", type=int, default=2, help="times each question is asked each way (fastest kept)")
    parser.add_argument("--baseline", default="", help="the git revision to compare against (default: merge-base)")
    parser.add_argument("--explain", type=int, default=60, help="questions EXPLAINed both ways (0: none)")
    parser.add_argument("--profile", type=int, default=100, help="questions the cProfile runs over (0: none)")
    return parser.parse_args()


def baseline_revision(given: str) -> str:
    if given:
        return given
    git = ["git", "-C", str(ROOT)]
    return subprocess.check_output([*git, "merge-base", "HEAD", "main"], text=True).strip()


def baseline_modules(revision: str) -> dict[str, types.ModuleType]:
    """The revision's recall modules, loaded beside the checkout's, each importing the others of its revision.

    The others import names from `memories.recall.candidates`, so while they load that name points at the
    revision's candidates; everything else they import (predicates, scopes, embeddings) is the live code."""
    from memories.recall import candidates as live_candidates

    try:
        return _load_baseline(revision)
    finally:
        sys.modules["memories.recall.candidates"] = live_candidates


def _load_baseline(revision: str) -> dict[str, types.ModuleType]:
    loaded: dict[str, types.ModuleType] = {}
    for name in MODULES:
        path = f"memories/recall/{name}.py"
        source = subprocess.check_output(["git", "-C", str(ROOT), "show", f"{revision}:{path}"], text=True)
        if name in _INTERNAL_IMPORTS:
            old, new = _INTERNAL_IMPORTS[name]
            if old not in source:
                raise SystemExit(f"{revision}:{path} does not import {old.strip()!r}; the loader needs updating")
            source = source.replace(old, new)
        module = types.ModuleType(f"baseline_{name}")
        module.__file__ = f"{revision[:10]}:{path}"
        module.__dict__.update(loaded)
        sys.modules[module.__name__] = module  # dataclasses look their module up
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        loaded[name] = module
        if name == "candidates":
            sys.modules["memories.recall.candidates"] = module
    return loaded


def checkout_modules() -> dict[str, types.ModuleType]:
    from memories.recall import candidates, contextual, query, ranking

    return {"candidates": candidates, "ranking": ranking, "contextual": contextual, "query": query}


def precompute_questions(vectors: dict[str, list[float]]) -> None:
    """Make the configured embedder answer each question with its vector computed beforehand."""
    from memories.embeddings import embedders

    by_text = {text.strip(): vector for text, vector in vectors.items()}  # recall strips the question

    class PrecomputedQuestions(embedders.LocalEmbedder):
        def embed_one(self, text: str) -> list[float]:
            return by_text[text]

    real = embedders.get_embedder()
    key = next(key for key, value in embedders._embedders.items() if value is real)
    embedders._embedders[key] = PrecomputedQuestions(batch_size=64)


def as_the_web_role(organisation_id: str) -> None:
    """In the open transaction: as archivist_app, the tenant set, as a request runs."""
    from django.db import connection

    from tenancy.context import tenant_activate
    from tenancy.sql import APP_ROLE

    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
    tenant_activate(organisation_id=organisation_id)


_ORGANISATIONS: dict[str, object] = {}


def organisation_record(organisation_id: str):
    """The organisation's record, as a request's principal carries it (read once here, outside the timing)."""
    from accounts.models import Organisation

    if organisation_id not in _ORGANISATIONS:
        _ORGANISATIONS[organisation_id] = Organisation.objects.get(pk=organisation_id)
    return _ORGANISATIONS[organisation_id]


def ask(query_module, organisation_id: str, question: str) -> tuple[float, list[dict]]:
    """One recall as a request runs it: its own transaction, as archivist_app, the tenant set, the
    organisation's record given as the principal gives it."""
    from django.db import transaction

    from memories.scopes import Place

    organisation = organisation_record(organisation_id)
    with transaction.atomic():
        as_the_web_role(organisation_id)
        started = time.perf_counter()
        result = query_module.recall(
            organisation=organisation,
            place=Place("conversation", "private", ()),
            question=question,
            limit=10,
            mode="auto",
        )
        elapsed = (time.perf_counter() - started) * 1000
    if result.ranking["used"] != "contextual":
        raise SystemExit(f"recall ranked by {result.ranking['used']}, not contextual: {result.notice}")
    return elapsed, result.rows


def questions_of(args, conversations, organisations) -> list[tuple[str, object]]:
    return [
        (organisations[conv.sample_id], question)
        for conv in conversations
        for question in conv.questions[: args.questions or None]
    ]


def measure(args, asked, versions: dict[str, dict]) -> dict:
    names = list(versions)
    times: dict[str, list[float]] = {name: [] for name in names}
    same, hits = 0, {name: [0, 0] for name in names}
    for index, (organisation_id, question) in enumerate(asked):
        order = names if index % 2 == 0 else names[::-1]
        best = {name: float("inf") for name in names}
        found: dict[str, list[dict]] = {}
        for _ in range(args.rounds):
            for name in order:
                ms, found[name] = ask(versions[name]["query"], organisation_id, question.text)
                best[name] = min(best[name], ms)
        for name in names:
            times[name].append(best[name])
            refs = [row["source_ref"] for row in found[name]]
            hits[name][0] += bool(set(refs[:5]) & set(question.evidence))
            hits[name][1] += bool(set(refs) & set(question.evidence))
        same += found[names[0]] == found[names[1]]
    return {"times": times, "same": same, "hits": hits, "asked": len(asked)}


def captured_plans(asked, query_module) -> list[tuple[str, object]]:
    """The statement a version's recall runs first for each question, as it built it, with its tenant."""
    plans: list[tuple[str, object]] = []
    execute = query_module._execute
    for organisation_id, question in asked:
        ran: list = []
        query_module._execute = lambda plan, ran=ran: ran.append(plan) or execute(plan)
        try:
            ask(query_module, organisation_id, question.text)
        finally:
            query_module._execute = execute
        plans.append((organisation_id, ran[0]))
    return plans


def explained(organisation_id: str, plan) -> tuple[float, float]:
    """Planning and execution ms of a statement by `EXPLAIN (ANALYZE, TIMING OFF)`, with the settings
    `query.run_plan` sends beside it, as the web role."""
    from django.db import connection, transaction

    settings_sql = "SET LOCAL max_parallel_workers_per_gather = 0; "
    if plan.hnsw_index:
        settings_sql += f"SET LOCAL hnsw.ef_search = {int(plan.params['ef'])}; "
    before, after = plan.planner_settings
    with transaction.atomic():
        as_the_web_role(organisation_id)
        with connection.cursor() as cursor:
            explain = "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY) "
            cursor.execute(settings_sql + before + explain + plan.sql + after, plan.params)
            while cursor.description is None and cursor.nextset():
                pass
            text = "\n".join(row[0] for row in cursor.fetchall())
    planning = float(re.search(r"Planning Time: ([0-9.]+)", text)[1])
    return planning, float(re.search(r"Execution Time: ([0-9.]+)", text)[1])


def explain_pairs(args, asked, versions: dict[str, dict]) -> dict[str, dict[str, list[float]]]:
    """Each version's statement for `--explain` questions spread over the set, EXPLAINed alternately, the
    fastest of `--rounds` + 1 kept (planning and execution together)."""
    chosen = asked[:: max(1, len(asked) // args.explain)][: args.explain]
    plans = {name: captured_plans(chosen, modules["query"]) for name, modules in versions.items()}
    names = list(versions)
    figures: dict[str, dict[str, list[float]]] = {name: {"planning": [], "execution": []} for name in names}
    for index in range(len(chosen)):
        best = {name: (float("inf"), float("inf")) for name in names}
        for _ in range(args.rounds + 1):
            for name in names if index % 2 == 0 else names[::-1]:
                best[name] = min(best[name], explained(*plans[name][index]), key=sum)
        for name in names:
            figures[name]["planning"].append(best[name][0])
            figures[name]["execution"].append(best[name][1])
    return figures


def report_explained(figures: dict[str, dict[str, list[float]]]) -> None:
    names = list(figures)
    count = len(figures[names[0]]["planning"])
    print(f"\n## The statement by EXPLAIN (ANALYZE, TIMING OFF), {count} questions, as archivist_app (load {load()})\n")
    print("| version | planning p50 ms | execution p50 ms | both p50 ms |")
    print("| --- | --- | --- | --- |")
    for name in names:
        planning, execution = figures[name]["planning"], figures[name]["execution"]
        both = [p + e for p, e in zip(planning, execution, strict=True)]
        print(
            f"| {name} | {statistics.median(planning):.2f} | {statistics.median(execution):.2f} |"
            f" {statistics.median(both):.2f} |"
        )
    for part in ("planning", "execution"):
        ratios = [new / old for old, new in zip(figures[names[0]][part], figures[names[1]][part], strict=True)]
        print(f"- {part}: median of per-question ratios {statistics.median(ratios):.3f}")


def sections(asked, modules: dict[str, types.ModuleType]) -> dict[str, list[float]]:
    """Wall-clock time per question in each function of `SECTIONS` the version defines (wrapped for the pass)."""
    spent: dict[str, float] = defaultdict(float)
    saved = []

    def timing(label, function):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += (time.perf_counter() - started) * 1000

        return timed

    for module_name, function_name in SECTIONS:
        module = modules[module_name]
        if hasattr(module, function_name):
            label = f"{module_name}.{function_name}"
            saved.append((label, module, function_name, getattr(module, function_name)))
            setattr(module, function_name, timing(label, getattr(module, function_name)))
    per_question: dict[str, list[float]] = defaultdict(list)
    try:
        for organisation_id, question in asked:
            spent.clear()
            ms, _ = ask(modules["query"], organisation_id, question.text)
            per_question["recall (whole call)"].append(ms)
            for label, *_ in saved:
                per_question[label].append(spent[label])
    finally:
        for _, module, function_name, function in saved:
            setattr(module, function_name, function)
    return per_question


def profile(asked, query_module) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for organisation_id, question in asked:
        ask(query_module, organisation_id, question.text)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(35)
    return out.getvalue()


def p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def report(measured: dict) -> None:
    times, names = measured["times"], list(measured["times"])
    print(f"\n## recall(), mode auto, outside the embedding ({measured['asked']} questions, load {load()})\n")
    print("| version | p50 ms | p95 ms |")
    print("| --- | --- | --- |")
    for name in names:
        print(f"| {name} | {statistics.median(times[name]):.2f} | {p95(times[name]):.2f} |")
    ratios = [new / old for old, new in zip(times[names[0]], times[names[1]], strict=True)]
    print(f"\n{names[1]} / {names[0]}: median of per-question ratios {statistics.median(ratios):.3f}.")
    asked = measured["asked"]
    print(f"Same ranked top 10 rows (every column): {measured['same']} of {asked} questions.")
    for name, (five, ten) in measured["hits"].items():
        print(f"- {name}: hit@5 {five / asked:.3f}, hit@10 {ten / asked:.3f}")


def report_sections(name: str, per_question: dict[str, list[float]]) -> None:
    print(f"\nSections, {name} (ms per question; load {load()}):\n")
    print("| section | p50 | p95 | mean |")
    print("| --- | --- | --- | --- |")
    for label, values in per_question.items():
        print(f"| {label} | {statistics.median(values):.2f} | {p95(values):.2f} | {statistics.fmean(values):.2f} |")


def main() -> None:
    args = arguments()
    from contextual_statement import question_vectors, seed
    from harness import start_services
    from quality import load_conversations

    revision = baseline_revision(args.baseline)
    server, redis = start_services(args.data_dir, DATABASE, {"ARCHIVIST_EMBEDDER": "local"})
    try:
        conversations = load_conversations(args.data)
        print(f"seeding {sum(len(conv.turns) for conv in conversations)} turns", flush=True)
        organisations = seed(args, conversations)
        precompute_questions(question_vectors(sorted({q.text for conv in conversations for q in conv.questions})))
        versions = {f"before ({revision[:10]})": baseline_modules(revision), "now (checkout)": checkout_modules()}
        asked = questions_of(args, conversations, organisations)
        for modules in versions.values():  # warm both, outside the figures
            for organisation_id, question in asked[:10]:
                ask(modules["query"], organisation_id, question.text)
        print(f"asking {len(asked)} questions both ways, alternating (load {load()})", flush=True)
        if args.explain:
            report_explained(explain_pairs(args, asked, versions))
        report(measure(args, asked, versions))
        for name, modules in versions.items():
            report_sections(name, sections(asked, modules))
        if args.profile:
            print(f"\ncProfile of the checkout's recall over {args.profile} questions:\n")
            print(profile(asked[: args.profile], versions["now (checkout)"]["query"]))
    finally:
        redis.stop()
        del server


if __name__ == "__main__":
    main()
