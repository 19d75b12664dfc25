"""How the stewards' queue and system recall behave as claims grow.

Builds a throwaway test database (config.settings.test), fills it with
system claims of which a share carry steward records and a few are promoted
to stances, then prints, at 100 claims and again at N, for the queue page as
a steward sees it (row forms, facet counts), a claim page, the stances list
and the system plane (claims and live stances): the number of queries and the
median time of a few runs. The query counts must not grow with N.

    .venv/bin/python bench/admissions_queue.py --n 10000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
os.environ.setdefault("ARCHIVIST_EMBEDDER", "none")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_databases, teardown_databases  # noqa: E402
from django.utils import timezone  # noqa: E402

from accounts.models import Membership  # noqa: E402
from accounts.services import organisation_create, user_create  # noqa: E402
from admissions.models import AdmissionRecord, Stance  # noqa: E402
from admissions.services import claim_promote, stance_create  # noqa: E402
from admissions.system_recall import eligible_claims, eligible_stances  # noqa: E402
from memories.models import Memory  # noqa: E402

PROMOTED_PER_STEP = 20


def people():
    org = organisation_create(slug="bench")
    author = user_create(username="author", organisation=org, role=Membership.Role.MEMBER)
    steward = user_create(username="steward", organisation=org, role=Membership.Role.STEWARD, password="pw")
    second = user_create(username="second", organisation=org, role=Membership.Role.STEWARD, password="pw")
    return org, author, steward, second


def fill(n: int, start: int, org, author, steward, second) -> Memory:
    """Claims start..n-1; a third decided by `steward`; PROMOTED_PER_STEP admitted ones promoted by `second`."""
    today = date.today()
    rows = [
        Memory(
            organisation=org,
            bucket="system",
            author="person",
            written_by=author,
            source_kind="person",
            body=f"Claim number {i} about entity {i % 50}",
            slug=f"sys:bench-{i % 2000}",
            entity=f"entity-{i % 50}",
            transparency="ledger" if i % 3 else "glass",
            as_of=today - timedelta(days=i % 700),
            admission="candidate",
            evidence_refs=[{"kind": "url" if i % 4 else "dataset", "ref": f"https://example.org/{i}"}],
        )
        for i in range(start, n)
    ]
    Memory.objects.bulk_create(rows, batch_size=2000)
    now = timezone.now()
    decisions = ["admit", "reject", "challenge"]
    records = [
        AdmissionRecord(organisation=org, claim=row, decision=decisions[i % 3], steward=steward, reason="bench", at=now)
        for i, row in enumerate(rows)
        if i % 3 == 0
    ]
    AdmissionRecord.objects.bulk_create(records, batch_size=2000)
    admitted = [record.claim for record in records if record.decision == "admit"]
    for index, claim in enumerate(admitted[:PROMOTED_PER_STEP]):
        stance = stance_create(id=f"bench-{start}-{index}", title=f"Bench {index}", body="Bench", reviewed_by=second)
        claim_promote(claim=claim, steward=second, stance=stance, reason="bench")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return rows[0]


def measure(label: str, action, runs: int = 5) -> None:
    times, counts = [], []
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            action()
            times.append((time.perf_counter() - start) * 1000)
        counts.append(len(queries))
    print(f"{label:<45} {counts[-1]:>3} queries   median {statistics.median(times):8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    args = parser.parse_args()
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        org, author, steward, second = people()
        client = Client()
        client.login(username="steward", password="pw")

        def page(url, params=None):
            def run():
                response = client.get(url, params or {})
                assert response.status_code == 200, response.status_code

            return run

        queue = "/admin/admissions/systemclaim/"
        start = 0
        for size in (100, args.n):
            sample = fill(size, start, org, author, steward, second)
            start = size
            print(f"\n{size} system claims, a third with a steward's record, {Stance.objects.count()} stances")
            measure("queue, no filter (tombstones hidden)", page(queue))
            measure("queue, candidates", page(queue, {"status": "candidate"}))
            measure("queue, everything with tombstones", page(queue, {"status": "all"}))
            filtered = {"status": "challenged", "evidence_kind": "dataset"}
            measure("queue, challenged + dataset evidence", page(queue, filtered))
            measure("claim page (related claims, history)", page(f"{queue}{sample.pk}/change/"))
            measure("stances list", page("/admin/admissions/stance/"))
            measure("system plane: claims (limit 5)", lambda: list(eligible_claims(today=date.today())[:5]))
            measure("system plane: live stances (limit 5)", lambda: list(eligible_stances(today=date.today())[:5]))
    finally:
        teardown_databases(databases, verbosity=0)


if __name__ == "__main__":
    main()
