"""docs/deploying.md, followed on this machine, and the metrics an operator watches the deployment with.

PostgreSQL and Redis run as outside services (the project's own binaries, started here); the administrator's
script makes the roles, and the application's users have neither superuser nor CREATEROLE. Web (gunicorn, two
workers), worker and beat run as separate processes, each from the guide's own box, so the guide cannot drift
from what is tested; the worker is traced as the guide's "Traces" says (spans printed to its log). The two tests
share one deployment, in this order, on one pytest-xdist worker.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from tests.deployment import GUIDE, Deployment, guide_steps, guide_variables, spans

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("deploying-guide")]

DM = {"channel": "D-mona", "kind": "dm", "people": ["mona"]}
CHANNEL = {"channel": "C-ops", "kind": "public"}
FACTS = ("Deploys happen on Tuesdays after the stand-up", "The staging database is called pluto")
# The guide's steps, each run by the tests below.
STEPS = (
    "environment",
    "setup-sql",
    "setup-run",
    "migrate",
    "collectstatic",
    "first-agent",
    "web",
    "worker",
    "beat",
    "backup",
    "restore-setup",
    "restore",
)
PRIVILEGED_LOGINS = (
    "SELECT rolname || '|' || rolsuper || '|' || rolcreaterole || '|' || rolcreatedb || '|' || rolbypassrls"
    " FROM pg_roles WHERE rolname IN ('archivist', 'archivist_web') ORDER BY rolname"
)
VERSIONS = "SELECT current_setting('server_version'), (SELECT extversion FROM pg_extension WHERE extname = 'vector')"
RECALL_ROUTE = {"endpoint": "api/v1/recall", "method": "POST", "status": "200"}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """The guide's deployment up to its running processes: services, roles, migrations, static files, an agent."""
    deployment = Deployment(tmp_path_factory.mktemp("deployment"))
    try:
        deployment.start_services()
        deployment.run("setup-sql")
        deployment.run("setup-run")
        deployment.run("migrate")
        deployment.run("collectstatic")
        output = deployment.run("first-agent")
        deployment.token = output.strip().splitlines()[-1]
        # The person the thread is with: an account holder of the organisation.
        deployment.manage("create_user", "mona", "--org", "acme", "--role", "member")
        deployment.start("web")
        # The worker traced as the guide's "Traces" says, its spans printed to its log.
        deployment.start("worker", OTEL_TRACES_EXPORTER="console", OTEL_BSP_SCHEDULE_DELAY="200")
        deployment.start("beat")
        deployment.wait_healthy(workers=2)
        yield deployment
    finally:
        deployment.stop()


def scrape(deployment: Deployment, **headers: str) -> tuple[int, str]:
    return deployment.call("GET", "/metrics", headers=headers)


def sample(text: str, name: str, labels: dict[str, str]) -> float:
    """One sample's value in Prometheus' text format (0 when absent)."""
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and all(found.labels.get(key) == value for key, value in labels.items()):
                return found.value
    return 0.0


def per_worker(folder: Path, name: str, labels: dict[str, str], scratch: Path) -> dict[int, float]:
    """`name`'s value in each process's own files of the metrics folder, read one process at a time."""
    pids = {int(match.group(1)) for path in folder.glob("*.db") if (match := re.search(r"_(\d+)\.db$", path.name))}
    values = {}
    for pid in pids:
        alone = scratch / str(pid)
        alone.mkdir(parents=True, exist_ok=True)
        for path in folder.glob(f"*_{pid}.db"):
            shutil.copy(path, alone / path.name)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))
        values[pid] = registry.get_sample_value(name, labels) or 0.0
        shutil.rmtree(alone)
    return values


def recall(deployment: Deployment, question: str, place: dict = CHANNEL) -> dict:
    status, body = deployment.call(
        "POST", "/api/v1/recall", {"place": place, "question": question, "limit": 5}, token=deployment.token
    )
    assert status == 200, body
    return json.loads(body)


def test_metrics_count_recalls_and_refusals_summed_across_two_web_workers(deployment, tmp_path):
    status, before = scrape(deployment)
    assert status == 200, before
    folder = Path(deployment.env["ARCHIVIST_DATA_DIR"]) / "metrics"
    workers = {child.pid for child in psutil.Process(deployment.processes["web"].pid).children(recursive=True)}
    assert len(workers) == 2, workers
    # Recalls in parallel until both workers have answered some (each takes the next connection it can).
    sent = 0
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(10):
            list(pool.map(lambda n: recall(deployment, f"deploys {n}"), range(8)))
            sent += 8
            served = per_worker(folder, "archivist_request_seconds_count", RECALL_ROUTE, tmp_path)
            if all(served.get(pid, 0) > 0 for pid in workers):
                break
    served = per_worker(folder, "archivist_request_seconds_count", RECALL_ROUTE, tmp_path)
    assert all(served.get(pid, 0) > 0 for pid in workers), served
    status, after = scrape(deployment)
    assert status == 200, after
    # The endpoint's figure is the sum of the two workers', and counts every recall sent.
    assert sample(after, "archivist_request_seconds_count", RECALL_ROUTE) == sum(served.values()) == sent
    statement = {"operation": "recall", "stage": "statement"}
    moved = sample(after, "archivist_stage_seconds_count", statement) - sample(
        before, "archivist_stage_seconds_count", statement
    )
    assert moved == sent
    assert sample(after, "archivist_stage_seconds_sum", statement) > sample(
        before, "archivist_stage_seconds_sum", statement
    )

    # A malformed Authorization header is refused before any view: the refusal counter moves by one.
    reason = {"reason": "malformed_authorization"}
    status, _ = deployment.call(
        "POST", "/api/v1/recall", {}, headers={"X-Forwarded-Proto": "https", "Authorization": "Basic Zm9vOmJhcg=="}
    )
    assert status == 401
    _, refused = scrape(deployment)
    assert (
        sample(refused, "archivist_requests_refused_total", reason)
        == sample(after, "archivist_requests_refused_total", reason) + 1
    )
    # The live figures: both services up, every queue reported, the backlog measured.
    assert sample(refused, "archivist_database_up", {}) == 1
    assert sample(refused, "archivist_redis_up", {}) == 1
    assert {"embed", "consolidate", "maintenance"} <= {
        found.labels["queue"]
        for family in text_string_to_metric_families(refused)
        for found in family.samples
        if found.name == "archivist_queue_depth"
    }
    assert "archivist_consolidation_lag_seconds" in refused
    # A request a proxy forwarded is not served the metrics, even from this host.
    status, _ = scrape(deployment, **{"X-Forwarded-For": "203.0.113.9"})
    assert status == 403


def remember_facts(deployment: Deployment) -> None:
    for fact in FACTS:
        status, body = deployment.call(
            "POST",
            "/api/v1/memories",
            {"body": fact, "place": CHANNEL, "subject_type": "workspace"},
            token=deployment.token,
        )
        assert status == 201, body


def consolidate_a_thread(deployment: Deployment) -> None:
    events = [
        {"id": "1", "role": "user", "author": "mona", "text": "Call me Mo.", "time": "2026-11-30T09:00:00Z"},
        {"id": "2", "role": "assistant", "author": "helper", "text": "Will do.", "time": "2026-11-30T09:00:01Z"},
        {"id": "3", "role": "user", "author": "mona", "text": "My timezone is CET", "time": "2026-11-30T09:00:05Z"},
    ]
    status, body = deployment.call(
        "POST",
        "/api/v1/threads/T-1/events",
        {"events": [{**event, "place": DM} for event in events]},
        token=deployment.token,
    )
    assert status == 201, body
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        status, body = deployment.call("GET", "/api/v1/threads/T-1", token=deployment.token)
        thread = json.loads(body)
        if thread["consolidated_through"] == 3 and len(thread["learned"]) == 2:
            return
        time.sleep(0.3)
    raise AssertionError(f"not consolidated: {body}\n{deployment.log('worker')[-3000:]}")


def consolidation_traced(deployment: Deployment) -> None:
    """The worker's consolidation task is a span, with the statements it ran under it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        traced = spans(deployment.log("worker"))
        tasks = [span for span in traced if span["name"] == "run/threads.tasks.consolidate_thread"]
        under = {span["context"]["trace_id"] for span in tasks}
        if tasks and any(
            span["attributes"].get("db.system") == "postgresql" and span["context"]["trace_id"] in under
            for span in traced
        ):
            return
        time.sleep(0.3)
    raise AssertionError(f"no consolidation span with its statements:\n{deployment.log('worker')[-3000:]}")


def recalled(deployment: Deployment) -> set[str]:
    """The bodies a workspace question and a DM question recall."""
    rows = recall(deployment, "When do deploys happen?", CHANNEL)["results"]
    rows += recall(deployment, "What is her timezone?", DM)["results"]
    return {row["body"] for row in rows}


def test_the_guide_deploys_serves_consolidates_and_restores(deployment):
    # Every process read the variables the guide's environment step exports, with this machine's values.
    assert set(guide_variables(deployment.steps)) <= set(deployment.env)
    # The application's login roles hold no privilege beyond logging in.
    privileged = subprocess.run(
        ["psql", "-At", deployment.env["ADMIN_DATABASE_URL"], "-c", PRIVILEGED_LOGINS],
        env=deployment.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert privileged == ["archivist|false|false|false|false", "archivist_web|false|false|false|false"]
    # The guide's table of versions names the PostgreSQL and pgvector this test ran on as tested.
    versions = subprocess.run(
        ["psql", "-At", "-F", " ", deployment.env["DATABASE_URL"], "-c", VERSIONS],
        env=deployment.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    tested = dict(re.findall(r"^\| (PostgreSQL|pgvector) \| [^|]+ \| ([^|]+) \|$", GUIDE.read_text(), re.M))
    assert versions[0] in tested["PostgreSQL"] and versions[1] in tested["pgvector"], (versions, tested)
    remember_facts(deployment)
    consolidate_a_thread(deployment)
    consolidation_traced(deployment)
    # The worker embeds what was remembered: recall by meaning finds it.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = recalled(deployment)
        if set(FACTS) <= found and "mona's timezone is CET" in found:
            break
        time.sleep(0.3)
    assert set(FACTS) <= found and "mona's timezone is CET" in found, found
    status, body = deployment.call(
        "POST",
        "/api/v1/render",
        {"place": DM, "turn_id": "turn-1", "question": "What should I call her?"},
        token=deployment.token,
    )
    assert status == 200, body
    assert "mona wants to be called Mo" in json.loads(body)["text"]

    deployment.run("backup")
    deployment.run("restore-setup")
    deployment.run("restore")
    # The web again, on the restored database: the same facts come back.
    deployment.stop_processes("web")
    restored = deployment.env["RESTORE_DATABASE_URL"].replace("archivist@", "archivist_web@")
    deployment.start("web", WEB_DATABASE_URL=restored, WEB_CONCURRENCY="1")
    deployment.wait_healthy(workers=1)
    assert set(FACTS) <= recalled(deployment)
    assert "mona's timezone is CET" in recalled(deployment)


def test_the_guide_steps_are_read_from_the_page():
    page = "Start it:\n\n<!-- step: web -->\n```sh\ngunicorn x\n```\n\nNot a step:\n\n```sh\nls\n```\n"
    assert guide_steps(page) == {"web": "gunicorn x"}
    assert set(guide_steps()) == set(STEPS)
