"""The Celery app. Queues and beat schedules live here, in code."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

app = Celery("archivist")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("embed"), Queue("consolidate"), Queue("maintenance"))
app.conf.task_default_queue = "maintenance"
app.conf.beat_schedule = {}
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
