"""Maintenance tasks of the agent-turn API: tenants' vector indexes and old idempotency keys. Thin: they call
`memories.vector_index` and `memories.turn_services`, take no arguments that could go stale, and are safe
to run twice."""

from __future__ import annotations

from celery import shared_task

from memories.idempotency import idempotency_keys_expire
from memories.vector_index import vector_index_maintain


@shared_task(name="memories.vector_index_maintain", ignore_result=True, acks_late=True)
def vector_index_maintain_task() -> dict:
    return vector_index_maintain()


@shared_task(name="memories.idempotency_keys_expire", ignore_result=True, acks_late=True)
def idempotency_keys_expire_task() -> int:
    return idempotency_keys_expire()
