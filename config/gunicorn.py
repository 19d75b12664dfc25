"""gunicorn's hooks for Archivist's web workers (`gunicorn -c python:config.gunicorn`)."""

# `post_worker_init` runs in each worker once it has loaded the application and
# before it accepts a connection: it loads the embedding model (ONNX Runtime, or
# torch if that is unavailable) and runs the recall code path once
# (`memories.embeddings.warmup`), so no caller pays a worker's first-use cost. The master
# sends no traffic to a worker; the listening socket is shared, so until a worker
# is warm the others (or the socket's backlog) take its share.
#
# `post_fork` tells each worker the server's request slots before it loads the
# application, so the per-organisation share follows the worker count however
# gunicorn was given it (`--workers`, `WEB_CONCURRENCY`, a signal adding one).
#
# `on_starting` (the master, before any worker) points every worker at one metrics folder, emptied of the last
# run's files, and `child_exit` drops an exited worker's gauges: /metrics sums the workers
# (`config/observability/multiprocess.py`).
#
# `worker_exit` (a stopping worker) answers the refusals its tarpit still holds, so none waits on a gone process.

from __future__ import annotations

import os


def post_worker_init(worker) -> None:
    from config.warm import mark_warm
    from memories.embeddings.warmup import warm_up

    try:
        report = warm_up(heartbeat=worker.notify)
    except Exception as error:  # noqa: BLE001 - a worker that could not warm still serves, cold
        worker.log.warning("worker %s could not warm up: %s", worker.pid, error)
    else:
        worker.log.info("worker %s warm: %s", worker.pid, report)
    mark_warm("web")


def post_fork(server, worker) -> None:
    """Tell the worker how many requests the server runs at once (workers times threads), before it loads the
    application: the fair share of each organisation is sized from it (`ORGANISATION_IN_FLIGHT`)."""
    os.environ["ARCHIVIST_WEB_SLOTS"] = str(server.num_workers * max(1, server.cfg.threads))


def on_starting(server) -> None:
    """In the master, before any worker: the metrics folder every worker writes to (emptied of the last run)."""
    from config.embedded import data_dir
    from config.observability.multiprocess import prepare_folder

    server.log.info("metrics folder: %s", prepare_folder(data_dir()))


def worker_exit(server, worker) -> None:
    """In a stopping worker: the refusals it still holds answered at once (`lib.api.tarpit`)."""
    from lib.api.tarpit import tarpit

    tarpit.release_all()


def child_exit(server, worker) -> None:
    from config.observability.multiprocess import worker_exited

    worker_exited(worker.pid)
