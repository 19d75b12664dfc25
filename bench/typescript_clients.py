"""The TypeScript packages' cost per call against bare `fetch` on the same requests.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/typescript_clients.py --calls 200   # about a minute, prints figures

1. Its own PostgreSQL and Redis (var/bench-typescript), one organisation with an agent and the people mona and
   max, gunicorn as the run command starts it (requests as `archivist_app`, under row-level security), no
   embedder (embedding happens after a write in the workers, so it is not part of a write's cost).
2. `npm run build` in clients/typescript, then `clients/typescript/bench/overhead.mjs`: per call, interleaved,
   `recall` and `remember` through `@archivist/client` and through bare `fetch` (the same keep-alive
   connection pool, JSON and idempotency key), and each package's own `bench/cases.mjs` beside its bare-fetch
   equivalent; the median and p95 of each, the overhead (median difference) and the ratio.

The client runs on the same two cores as the server; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness import UNLIMITED_CLIENT, free_port, start_gunicorn, start_services, stop_services  # noqa: E402 - after the path is set

DATABASE = "archivist_typescript"
WORKSPACE = ROOT / "clients" / "typescript"


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--port", type=int, default=0, help="default: a free port on loopback")
    parser.add_argument("--data-dir", default=str(ROOT / "var" / "bench-typescript"))
    return parser.parse_args()


def main() -> None:
    args = arguments()
    subprocess.run(["npm", "run", "build"], cwd=WORKSPACE, check=True, stdout=subprocess.DEVNULL)
    data_dir = Path(args.data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
    server, redis = start_services(data_dir, DATABASE, UNLIMITED_CLIENT)
    gunicorn = None
    try:
        from accounts.models import Membership
        from accounts.services import agent_create, organisation_create, user_create

        organisation = organisation_create(slug="bench-typescript")
        for name in ("mona", "max"):
            user_create(username=name, organisation=organisation, role=Membership.Role.MEMBER, password=f"pw-{name}-1")
        _, token = agent_create(organisation=organisation, name="bench")
        port = args.port or free_port()
        gunicorn = start_gunicorn(port=port, data_dir=data_dir, workers=2, threads=4)
        env = {**os.environ, "ARCHIVIST_URL": f"http://127.0.0.1:{port}", "ARCHIVIST_TOKEN": token}
        subprocess.run(["node", "bench/overhead.mjs", "--calls", str(args.calls)], cwd=WORKSPACE, env=env, check=True)
    finally:
        if gunicorn is not None:
            gunicorn.terminate()
            gunicorn.wait(timeout=20)
        stop_services(server, redis)


if __name__ == "__main__":
    main()
