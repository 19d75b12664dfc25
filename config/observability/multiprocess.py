"""prometheus-client's multiprocess mode, so /metrics sums every gunicorn worker and not the one that answered.

Each worker writes its figures to its own files in one folder; a scrape reads them all. The folder is
`PROMETHEUS_MULTIPROC_DIR`, by default `metrics/` in the data folder. The gunicorn master empties it as it
starts (figures of a previous run are not this one's) and marks each worker that exits, so its gauges go.
"""

from __future__ import annotations

import os
from pathlib import Path

FOLDER_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def prepare_folder(data_folder: Path) -> Path:
    """Point this process and its children at the metrics folder, emptied of a previous run's files.

    Called by the gunicorn master before it forks a worker: prometheus-client reads the variable when
    it is first imported, which in a worker is after the fork."""
    folder = Path(os.environ.get(FOLDER_VARIABLE) or data_folder / "metrics")
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink(missing_ok=True)
    os.environ[FOLDER_VARIABLE] = str(folder)
    return folder


def files_in_use() -> bool:
    return bool(os.environ.get(FOLDER_VARIABLE))


def worker_exited(pid: int) -> None:
    """Drop a dead worker's live gauges (its counters and histograms stay counted)."""
    if files_in_use():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
