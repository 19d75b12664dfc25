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
