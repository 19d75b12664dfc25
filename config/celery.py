"""The Celery app. Queues and beat schedules live here, in code."""

import os

from celery import Celery
from celery.schedules import crontab
from django.conf import settings
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

app = Celery("archivist")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("embed"), Queue("consolidate"), Queue("maintenance"))
app.conf.task_default_queue = "maintenance"
app.conf.beat_schedule = {}
app.conf.task_routes = {
    "memories.tasks.embed_memories": {"queue": "embed"},
    "threads.tasks.*": {"queue": "consolidate"},
}
app.autodiscover_tasks()
# The agent-turn API's maintenance (memories/index_tasks.py): large tenants'
# vector indexes, built in the background, and old idempotency keys.
app.autodiscover_tasks(["memories"], related_name="index_tasks")
app.conf.beat_schedule.update(
    {
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
    }
)

# The workers' own periodic jobs (memories/tasks.py, threads/tasks.py). Reading
# the configuration above has loaded Django's settings, so intervals are settings.
app.conf.beat_schedule.update(
    {
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
)
