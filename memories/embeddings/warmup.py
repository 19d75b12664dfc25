"""Warm a process before it takes traffic: the embedding model, and the recall statement's code path."""

# Called by gunicorn's `post_worker_init` (config/gunicorn.py) in each web worker before it accepts a
# connection, and by Celery's `worker_process_init` (config/celery.py) in each pool child. Without it, the
# first recall of each web worker loaded the model (5-9.5 s).
#
# The recall statement runs once for the nil organisation in a transaction with no tenant set, so row-level
# security shows it nothing: what it warms is Python's side (the modules the call imports, the statement
# builders, the connection's role and pgvector's type). PostgreSQL keeps plans and catalog caches per
# connection, and a threaded worker opens one per thread on its first request, so that part is not warmed.

from __future__ import annotations

import logging
import time
import uuid

from django.db import connections, transaction

from memories.embeddings.embedders import embedder_warm_up
from memories.recall.query import recall
from memories.scopes import Place

logger = logging.getLogger(__name__)

NIL_ORGANISATION = uuid.UUID(int=0)


def warm_statements() -> None:
    """One contextual recall for nobody: its code path runs, it finds nothing, nothing is written."""
    try:
        with transaction.atomic():
            recall(
                organisation=NIL_ORGANISATION,
                place=Place("warm-up", "public", ()),
                question="What was said before this process started?",
                mode="auto",
            )
            transaction.set_rollback(True)
    finally:
        # This thread's connection serves no request; the request threads open their own.
        connections.close_all()


def warm_up(*, heartbeat=None, batch: bool = False, statements: bool = True) -> dict:
    """Embedding model first (the long part), then the recall statement; returns what was done and how long."""
    started = time.perf_counter()
    report = embedder_warm_up(heartbeat=heartbeat, batch=batch)
    if statements:
        statement_started = time.perf_counter()
        try:
            warm_statements()
            report["statements_seconds"] = round(time.perf_counter() - statement_started, 2)
        except Exception as error:  # noqa: BLE001 - a database not up yet must not stop the worker
            logger.warning("could not warm the recall statement: %s", error)
            report["statements"] = f"not warmed: {error}"
    report["total_seconds"] = round(time.perf_counter() - started, 2)
    logger.info("warmed up: %s", report)
    return report
