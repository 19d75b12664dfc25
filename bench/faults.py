"""Faults: PostgreSQL is killed and restarted while agents write through gunicorn.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/faults.py          # about a minute, prints figures

Its own PostgreSQL and Redis (var/bench-faults), gunicorn as the run command
starts it (requests as `archivist_app`). `--writers` clients remember facts
(and one recalls) without pause. After `--before` seconds PostgreSQL is stopped
in immediate mode (`pg_ctl stop -m immediate`: no checkpoint, every backend
killed, crash recovery on the next start), left down for `--down` seconds,
started again, and the writers go on for `--after` seconds. Then:

- every answer in the gap: its status and error code (the API promises 503
  `{"error": "unavailable"}` with a Retry-After, never a 500);
- how long after the restart the first write succeeds;
- every write that got a 201 is looked up in the database: all must be there.

Nothing is asserted; figures are printed for docs/reliability.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness import rows_present, start_gunicorn, start_services, stop_services  # noqa: E402 - after the path is set

DATABASE = "archivist_faults"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--before", type=float, default=8)
    parser.add_argument("--down", type=float, default=6)
    parser.add_argument("--after", type=float, default=12)
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench-faults"))
    parser.add_argument("--port", type=int, default=8767)
    return parser.parse_args()


def say(message: str) -> None:
    print(f"[faults] {message}", flush=True)


def seed() -> tuple[str, dict]:
    from accounts.models import Membership
    from accounts.services import agent_create, organisation_create, user_create

    organisation = organisation_create(slug="faults")
    user_create(username="mona", organisation=organisation, role=Membership.Role.MEMBER)
    _, token = agent_create(organisation=organisation, name="writer")
    return token, {"channel": "D-mona", "kind": "dm", "people": ["mona"]}


def stop_immediately(pgdata: Path) -> None:
    """Every PostgreSQL process ends at once, as in a crash: no checkpoint, recovery at the next start."""
    from config import embedded

    embedded.stop_postgres(pgdata, mode="immediate")


def main() -> None:
    import requests

    args = arguments()
    data_dir = Path(args.data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
    server, redis = start_services(
        data_dir, DATABASE, {"ARCHIVIST_EMBEDDER": "none", "ARCHIVIST_TOKEN_RATE": "100000/s"}
    )
    token, place = seed()
    gunicorn = start_gunicorn(port=args.port, data_dir=data_dir)
    base = f"http://127.0.0.1:{args.port}"
    headers = {"Authorization": f"Bearer {token}"}
    lock = threading.Lock()
    answers: list[tuple[float, str, int, str]] = []  # (seconds since start, operation, status, error code)
    created: list[str] = []
    started = time.monotonic()
    stop_at = started + args.before + args.down + args.after

    def writer(number: int) -> None:
        session = requests.Session()
        sequence = 0
        while time.monotonic() < stop_at:
            sequence += 1
            operation = "recall" if number == 0 else "remember"
            try:
                if operation == "recall":
                    response = session.post(f"{base}/api/v1/recall", json={"place": place}, headers=headers, timeout=10)
                else:
                    body = {"body": f"Writer {number} fact {sequence}", "place": place}
                    response = session.post(f"{base}/api/v1/memories", json=body, headers=headers, timeout=10)
                code = ""
                if response.status_code >= 400:
                    try:
                        code = response.json().get("error", "")
                    except ValueError:
                        code = "not json"
                    if response.status_code == 503 and not response.headers.get("Retry-After"):
                        code += " (no Retry-After)"
                with lock:
                    answers.append((time.monotonic() - started, operation, response.status_code, code))
                    if response.status_code == 201:
                        created.append(response.json()["id"])
                if response.status_code == 503:
                    time.sleep(0.2)
            except requests.RequestException as error:
                with lock:
                    answers.append((time.monotonic() - started, operation, 0, type(error).__name__))
                time.sleep(0.2)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(args.writers)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(args.before)
        say("stopping PostgreSQL in immediate mode")
        killed_at = time.monotonic() - started
        stop_immediately(data_dir / "pg")
        time.sleep(args.down)
        say("starting PostgreSQL again")
        restart_began = time.monotonic() - started
        server.ensure_postgres_running()
        restarted_at = time.monotonic() - started
        say(f"PostgreSQL accepted connections {restarted_at - restart_began:.1f} s after it was started")
        for thread in threads:
            thread.join()
    finally:
        gunicorn.terminate()
        gunicorn.wait(timeout=30)

    before = [a for a in answers if a[0] < killed_at]
    gap = [a for a in answers if killed_at <= a[0] < restarted_at]
    after = [a for a in answers if a[0] >= restarted_at]
    first_success = min((a[0] for a in after if a[2] in (200, 201)), default=float("nan"))

    def statuses(rows):
        return dict(Counter((status, code) if code else status for _, _, status, code in rows))

    print(
        f"\nPostgreSQL stopped at {killed_at:.1f} s, started again at {restart_began:.1f} s,"
        f" ready at {restarted_at:.1f} s (answers are counted by when they arrived)"
    )
    print(f"  before the kill: {len(before)} calls, {statuses(before)}")
    print(f"  while it was down: {len(gap)} calls, {statuses(gap)}")
    print(f"  after it was back: {len(after)} calls, {statuses(after)}")
    print(f"  first success {first_success - restarted_at:.2f} s after PostgreSQL was ready")
    server_errors = [a for a in answers if a[2] >= 500 and a[2] != 503]
    print(
        f"  answers 5xx other than 503: {len(server_errors)}; connection errors: {sum(1 for a in answers if a[2] == 0)}"
    )

    present = rows_present(created)
    print(f"  201s answered: {len(created)}; in the database after recovery: {present}")
    stop_services(server, redis)


if __name__ == "__main__":
    main()
