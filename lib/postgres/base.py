"""Django's PostgreSQL backend, whose per-request health check costs no round trip while the server is quiet."""

# With `CONN_HEALTH_CHECKS`, Django sends `SELECT 1` before the first statement of
# every request on a persistent connection: one round trip a request, for a
# connection that is almost always fine. A server that ends a connection (a
# restart, `pg_terminate_backend`, an idle timeout) sends its last message and
# closes the socket, so that socket has something to read; an idle connection
# the server has not ended has nothing. So the probe is sent only when the
# socket has something to read (or psycopg already knows the connection is
# closed or broken), and an unreadable one is taken as usable at the price of a
# poll. A connection lost without a word (a cable, a firewall) is found as
# before: its first statement fails, the request answers 503, and the connection
# is closed at the request's end (`tenancy.middleware`).

from __future__ import annotations

import logging
import select

from django.db.backends.postgresql import base

logger = logging.getLogger(__name__)


class DatabaseWrapper(base.DatabaseWrapper):
    # Django's, set in `connect()`; the stubs do not declare them.
    health_check_enabled: bool
    health_check_done: bool

    def close_if_health_check_failed(self) -> None:
        if self.health_check_enabled and not self.health_check_done and self.connection is not None:
            if self.server_has_been_silent():
                self.health_check_done = True
                return
            logger.info("database connection has unread input or is closed: probing it before use")
        super().close_if_health_check_failed()

    def server_has_been_silent(self) -> bool:
        """Whether the open connection has nothing unread from the server (so no notice that it ended)."""
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        try:
            poller = select.poll()  # not select(): a process may hold descriptors past its 1,024 limit
            poller.register(connection.fileno(), select.POLLIN)
            events = poller.poll(0)
        except (OSError, ValueError):  # a socket already gone: let the probe say so
            return False
        return not events
