"""The Celery app. Queues and beat schedules live here, in code."""

import logging
import os

from celery import Celery
from celery.schedules import crontab
from celery.signals import beat_init, worker_process_init
from django.conf import settings
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("archivist")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("embed"), Queue("consolidate"), Queue("maintenance"))
app.conf.task_default_queue = "maintenance"
app.conf.task_routes = {
    "memories.tasks.embed_memories": {"queue": "embed"},
    "threads.tasks.*": {"queue": "consolidate"},
}
app.autodiscover_tasks()
# A pool child loads the embedding model before it takes a task (below); give it time to.
app.conf.worker_proc_alive_timeout = 120.0


# Beat's schedule. Intervals are settings, read once Celery has loaded its
# configuration: touching app.conf or settings here, at import, would make every
# `import config` load the settings (and start the embedded PostgreSQL) before
# the run command has chosen its data folder.
@app.on_after_configure.connect
def add_beat_schedule(sender, **kwargs) -> None:
    sender.conf.beat_schedule = {
        # Large tenants' vector indexes, built in the background (memories/tasks.py).
        "vector-index-maintain": {
            "task": "memories.vector_index_maintain",
            "schedule": 600.0,
            "options": {"queue": "maintenance"},
        },
        "idempotency-keys-expire": {
            "task": "memories.idempotency_keys_expire",
            "schedule": 3600.0,
            "options": {"queue": "maintenance"},
        },
        # Rows the write path could not enqueue (broker down), or of an old model.
        "embed-sweep": {
            "task": "memories.tasks.sweep_embeddings",
            "schedule": float(settings.EMBEDDING_SWEEP_SECONDS),
            "options": {"queue": "maintenance"},
        },
        "purge-expired-memories": {
            "task": "memories.tasks.purge_expired_memories",
            "schedule": crontab(hour=3, minute=17),
            "options": {"queue": "maintenance"},
        },
        # Threads whose events arrived while the broker was down.
        "consolidation-sweep": {
            "task": "threads.tasks.sweep_consolidation",
            "schedule": float(settings.CONSOLIDATION_SWEEP_SECONDS),
            "options": {"queue": "consolidate"},
        },
    }


@worker_process_init.connect
def warm_pool_child(**kwargs) -> None:
    """Each pool child loads the embedding model before its first task (memories/embeddings/warmup.py)."""
    # Imported here: this module is loaded before Django's apps are.
    from config.warm import mark_warm
    from memories.embeddings.warmup import warm_up

    try:
        warm_up(batch=True, statements=False)
    except Exception as error:  # noqa: BLE001 - a child that could not warm still works, cold
        logging.getLogger(__name__).warning("could not warm the embedding model: %s", error)
    mark_warm("worker")


@worker_process_init.connect
def trace_pool_child(**kwargs) -> None:
    """Each pool child traces its tasks when OTEL_* asks for it (config/observability/tracing.py)."""
    from config.observability import tracing

    tracing.start("archivist-worker")


@beat_init.connect
def trace_beat(**kwargs) -> None:
    from config.observability import tracing

    tracing.start("archivist-beat")
