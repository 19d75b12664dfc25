"""/healthz: is the database reachable, are migrations applied, is Redis answering."""

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.http import JsonResponse


def _database() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True, "ok"
    except DatabaseError as error:
        return False, str(error).strip()


def _migrations() -> tuple[bool, str]:
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as error:
        return False, str(error).strip()
    return (not pending, "ok" if not pending else f"{len(pending)} unapplied")


def _redis() -> tuple[bool, str]:
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
        client.ping()
        return True, "ok"
    except redis.RedisError as error:
        return False, str(error)


def healthz(request):
    checks = {"database": _database(), "migrations": _migrations(), "redis": _redis()}
    healthy = all(ok for ok, _ in checks.values())
    body = {
        "status": "ok" if healthy else "degraded",
        "checks": {name: {"ok": ok, "detail": detail} for name, (ok, detail) in checks.items()},
    }
    return JsonResponse(body, status=200 if healthy else 503)
