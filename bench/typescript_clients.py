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
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness import client_bench_server  # noqa: E402 - after the path is set

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
    if not (WORKSPACE / "node_modules" / ".package-lock.json").exists():
        sys.exit(f"{WORKSPACE}/node_modules is missing: run `make venv` (or `npm ci` in {WORKSPACE}) first")
    subprocess.run(["npm", "run", "build"], cwd=WORKSPACE, check=True, stdout=subprocess.DEVNULL)
    data_dir = Path(args.data_dir)
    people = ("mona", "max")
    with client_bench_server(data_dir, DATABASE, "bench-typescript", port=args.port, people=people) as (url, token):
        env = {**os.environ, "ARCHIVIST_URL": url, "ARCHIVIST_TOKEN": token}
        subprocess.run(["node", "bench/overhead.mjs", "--calls", str(args.calls)], cwd=WORKSPACE, env=env, check=True)


if __name__ == "__main__":
    main()
