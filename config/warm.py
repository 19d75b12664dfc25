"""Each web worker and Celery pool child marks itself warm (its embedding model loaded) with a file in the run's
warm folder, so the run command says "running" only once every one of them can answer at full speed."""

from __future__ import annotations

import os
from pathlib import Path

WARM_DIR_ENV = "ARCHIVIST_WARM_DIR"


def mark_warm(role: str) -> None:
    """Record that this process (`web` or `worker`) is ready; nothing outside a run command's children."""
    folder = os.environ.get(WARM_DIR_ENV)
    if folder:
        Path(folder, f"{role}-{os.getpid()}").touch()


def warm_count(folder: Path, role: str) -> int:
    return len(list(folder.glob(f"{role}-*")))
