"""Work a web request hands off until its response has gone: the task sends its commits made.

A request's sends are held from Django's `request_started` and run on its `request_finished`, which the
WSGI server fires when it closes the response iterable, after it has written the body: the caller has
its answer before the broker is spoken to. Where nothing is held (Celery tasks, management commands,
tests without a request, a process that did not `connect()`) the work runs at once.

What is held is only ever a send for a row already committed: a process that dies before it runs them
loses the messages, never the rows, and each sender's beat sweep finds the rows later.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.core.signals import request_finished, request_started

logger = logging.getLogger(__name__)

# One list per thread: a WSGI server runs each request on one thread, start to close.
_held = threading.local()


def run_after_response(work: Callable[[], None]) -> None:
    """Run `work` once this thread's response has gone, or now when no request holds work."""
    pending = getattr(_held, "pending", None)
    if pending is None:
        work()
    else:
        pending.append(work)


def held_work() -> int:
    """How much work this thread's request holds (for tests and benchmarks)."""
    return len(getattr(_held, "pending", None) or [])


def request_began(**_signal) -> None:
    leftover = _taken()
    if leftover:
        # A response never closed (a server that skipped close(), a failure writing it): its work runs late.
        logger.warning("a request ended without request_finished; running its %d held sends now", len(leftover))
        _run(leftover)
    _held.pending = []


def request_ended(**_signal) -> None:
    _run(_taken())


def _taken() -> list[Callable[[], None]]:
    pending = getattr(_held, "pending", None) or []
    _held.pending = None
    return pending


def _run(pending: list[Callable[[], None]]) -> None:
    for work in pending:
        try:
            work()
        except Exception:  # noqa: BLE001 - one failing send must not keep the others from the broker
            logger.exception("held work failed after the response; the beat sweeps will catch its rows")


def connect() -> None:
    """Hold work from each request's start to its close, in this process (the WSGI application's wiring)."""
    request_started.connect(request_began, dispatch_uid="lib.after_response.began")
    request_finished.connect(request_ended, dispatch_uid="lib.after_response.ended")


def disconnect() -> None:
    request_started.disconnect(dispatch_uid="lib.after_response.began")
    request_finished.disconnect(dispatch_uid="lib.after_response.ended")
