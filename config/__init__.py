"""Project wiring: settings, URLs, the Celery app, WSGI and the embedded services."""

from config.celery import app as celery_app

__all__ = ["celery_app"]
