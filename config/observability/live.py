"""Figures measured when /metrics is scraped: is the database up, is Redis up, how deep are the task queues,
how far behind is consolidation. They describe shared services, so every worker would give the same answer:
they are asked once per scrape, not recorded per process."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from config.celery import app as celery_app

logger = logging.getLogger(__name__)

# kombu keeps a queue's messages of priority 0 in a list named after it, and other priorities in lists
# named with these separators and steps.
PRIORITY_SEPARATOR = "\x06\x16"
PRIORITY_STEPS = (3, 6, 9)


def queue_names() -> list[str]:
    return sorted(queue.name for queue in celery_app.conf.task_queues or ())


class LiveCollector(Collector):
    """Database and Redis health, queue depth and consolidation backlog, read at scrape time."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        database_up = GaugeMetricFamily("archivist_database_up", "1 if the database answered this scrape")
        backlog = self._consolidation_backlog()
        database_up.add_metric([], 1.0 if backlog is not None else 0.0)
        yield database_up
        if backlog is not None:
            threads, oldest = backlog
            yield GaugeMetricFamily(
                "archivist_consolidation_threads_behind", "Threads with events not yet consolidated", value=threads
            )
            yield GaugeMetricFamily(
                "archivist_consolidation_lag_seconds",
                "Age of the oldest thread event not yet consolidated (0 when none waits)",
                value=oldest,
            )
        redis_up = GaugeMetricFamily("archivist_redis_up", "1 if Redis answered this scrape")
        depths = self._queue_depths()
        redis_up.add_metric([], 1.0 if depths is not None else 0.0)
        yield redis_up
        if depths is not None:
            depth = GaugeMetricFamily("archivist_queue_depth", "Tasks waiting in each Celery queue", labels=["queue"])
            for name, waiting in depths.items():
                depth.add_metric([name], waiting)
            yield depth

    def _consolidation_backlog(self) -> tuple[int, float] | None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT threads_behind, oldest_seconds FROM archivist_consolidation_backlog()")
                threads, oldest = cursor.fetchone()
        except DatabaseError as error:
            logger.warning("metrics: the database did not answer: %s", error)
            connection.close_if_unusable_or_obsolete()
            return None
        return int(threads), float(oldest)

    def _queue_depths(self) -> dict[str, int] | None:
        try:
            client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
            with client.pipeline(transaction=False) as pipe:
                for name in queue_names():
                    pipe.llen(name)
                    for step in PRIORITY_STEPS:
                        pipe.llen(f"{name}{PRIORITY_SEPARATOR}{step}")
                lengths = pipe.execute()
        except redis.RedisError as error:
            logger.warning("metrics: Redis did not answer: %s", error)
            return None
        per_queue = len(PRIORITY_STEPS) + 1
        return {
            name: sum(lengths[index * per_queue : (index + 1) * per_queue]) for index, name in enumerate(queue_names())
        }
