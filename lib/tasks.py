"""Queueing a Celery task once the surrounding transaction commits, by the task's pinned name.

By name, so the module that writes never imports the module of tasks (which imports the writers it runs).
In a web request the send waits until the response has gone (`lib.after_response`).
"""

from __future__ import annotations

from collections.abc import Callable

from celery import current_app
from django.db import transaction

from lib.after_response import run_after_response


def enqueue_after_commit(
    task_name: str, *, args: list, queue: str, on_broker_down: Callable[[Exception], None]
) -> None:
    """Send `task_name` with `args` to `queue` after commit, so a worker never sees a row not yet written,
    and in a web request after its response, so the caller never waits for the broker.

    A broker that is down never fails the write, which has committed already: `on_broker_down` gets the
    error, and the caller's beat sweep finds the work later (as it does when the process dies before sending).
    """

    def send() -> None:
        try:
            current_app.send_task(task_name, args=args, queue=queue, retry=False)
        except Exception as error:  # noqa: BLE001 - any broker failure degrades to the sweep
            on_broker_down(error)

    transaction.on_commit(lambda: run_after_response(send))
