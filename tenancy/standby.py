"""Reads from a streaming standby, with the tenant set there too, and a caller that always sees its own writes."""

# With `DATABASE_REPLICA_URL` set (the `replica` connection), the reads that opt in (recall, the memory list and
# a memory's page over the API, the account holders' pages) run on the standby; render, every write and
# everything in a write's transaction stay on the primary (docs/scaling.md).
# - Row-level security holds on the standby: a standby read runs as `archivist_app` in a transaction of its own,
#   with the very tenant the primary's transaction has.
# - Read your writes: a request that wrote remembers, once committed, the primary's WAL position for its
#   organisation in Redis (kept as the highest seen). A standby read of that organisation is taken only when the
#   standby has replayed past it, and once it is forgotten, only within `WRITE_MEMORY_SECONDS` of the primary.
# - A standby that stops or lags fails no read: the primary answers (logged, counted by `count_fallback`), and a
#   failed standby is left alone for `RETRY_SECONDS`.
# The swap: during a standby read, this thread's `default` connection *is* the standby's, so every selector and
# query of the view reads there unchanged; a write would be refused by the standby's read-only transaction.

from __future__ import annotations

import contextlib
import io
import logging
import time
from collections.abc import Callable
from functools import partial

from django.conf import settings
from django.core.cache import caches
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import HttpRequest
from django.http.request import RawPostDataException

from lib.metrics import STANDBY_FALLBACKS
from tenancy.roles import REPLICA
from tenancy.sql import CROSS_TENANT_SETTING, STEWARD, TENANT_SETTING

logger = logging.getLogger(__name__)

WRITTEN_KEY = "standby:written:{organisation}"

# The highest position wins: two requests of one organisation may record theirs out of order.
_RECORD_HIGHEST = """
local known = redis.call('GET', KEYS[1])
if known and tonumber(known) >= tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
"""

# One round trip opens the standby read: the tenant, then whether the standby may answer (the last column).
# A server not in recovery is as current as itself. A standby with WAL still to replay counts as lagging by
# the age of the last transaction it replayed, and may answer only within `WRITE_MEMORY_SECONDS` of the primary,
# so a write whose position Redis has forgotten is still there.
STANDBY_OPEN_SQL = (
    "SELECT set_config(%s, %s, true), set_config(%s, %s, true), "
    "NOT pg_is_in_recovery() OR ("
    "pg_last_wal_replay_lsn() - '0/0'::pg_lsn >= %s AND ("
    "pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() "
    "OR now() - pg_last_xact_replay_timestamp() < make_interval(secs => %s)))"
)
WROTE_SQL = "SELECT pg_current_xact_id_if_assigned() IS NOT NULL, COALESCE(current_setting(%s, true), '')"
POSITION_SQL = "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"

_unreachable_until = 0.0  # per process: a standby that failed is left alone until then (monotonic clock)


def standby_configured() -> bool:
    return REPLICA in settings.DATABASES


def count_fallback(reason: str) -> None:
    """Count a read the primary answered in the standby's place, by reason (`unreachable`, `failed`, `behind`,
    `redis`)."""
    STANDBY_FALLBACKS.labels(reason=reason).inc()


def _fallback(reason: str, detail: object) -> None:
    logger.warning("standby read answered by the primary (%s): %s", reason, detail)
    count_fallback(reason)


def _redis():
    return caches["default"]._cache.get_client(write=True)


def written_position(organisation_id: str) -> int:
    """The primary's WAL position (bytes) after this organisation's last remembered write; 0 when none is."""
    known = _redis().get(WRITTEN_KEY.format(organisation=organisation_id))
    return int(known) if known else 0


def standby_remember_write(organisation_id: str) -> None:
    """After a commit: the primary's position now, at or past that commit, as the organisation's last write."""
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute(POSITION_SQL)
            position = int(cursor.fetchone()[0])
        _redis().eval(
            _RECORD_HIGHEST,
            1,
            WRITTEN_KEY.format(organisation=organisation_id),
            position,
            int(settings.REPLICA_WRITE_MEMORY_SECONDS * 1000),
        )
    except Exception as error:  # noqa: BLE001 - the write has committed; only its standby guard is lost
        logger.warning("organisation %s: the position of its write was not remembered: %s", organisation_id, error)


def note_write_in_transaction() -> None:
    """In a primary transaction about to commit: if it wrote, remember its position for its tenant once it has."""
    primary = connections["default"]
    if primary.needs_rollback:  # rolled back at the block's end: nothing of it commits
        return
    with primary.cursor() as cursor:
        cursor.execute(WROTE_SQL, [TENANT_SETTING])
        wrote, organisation_id = cursor.fetchone()
    if wrote and organisation_id:
        transaction.on_commit(partial(standby_remember_write, organisation_id))


def reads_from_standby(view: Callable) -> Callable:
    """Mark a page (a plain Django view) whose GET reads from the standby when one is configured."""
    view.reads_from_standby = True  # type: ignore[attr-defined]
    return view


class StandbyRead:
    """One request's standby read: entered by the view that opts in, left by the tenant middleware."""

    def __init__(self, request: HttpRequest, *, session_scope: tuple[str, str] = ("", "")):
        self.request = request
        self.session_scope = session_scope  # a signed-in person's (organisation, cross-tenant), for pages
        self.active = False  # the default connection is the standby's now
        self.used = False  # the standby was entered during this request
        self.failed = False  # the standby failed during the read: the primary answers it again
        self.declined = False  # the primary answers this request from now on
        self._atomic: transaction.Atomic | None = None
        self._primary: BaseDatabaseWrapper | None = None

    def enter(self, *, organisation_id: object, cross_tenant: str = "") -> bool:
        """Read from the standby for the rest of the request, under this tenant; False when the primary must."""
        global _unreachable_until
        if self.declined or self.active or not organisation_id:
            return False
        if time.monotonic() < _unreachable_until:
            count_fallback("unreachable")  # logged once, when it failed
            return False
        if not body_kept(self.request):
            return False
        organisation = str(organisation_id)
        try:
            required = written_position(organisation)
        except Exception as error:  # noqa: BLE001 - without the position, only the primary is sure to be current
            _fallback("redis", error)
            return False
        replica = connections[REPLICA]
        atomic = transaction.atomic(using=REPLICA)
        try:
            atomic.__enter__()
            try:
                with replica.cursor() as cursor:
                    cursor.execute(
                        STANDBY_OPEN_SQL,
                        [
                            TENANT_SETTING,
                            organisation,
                            CROSS_TENANT_SETTING,
                            cross_tenant,
                            required,
                            settings.REPLICA_WRITE_MEMORY_SECONDS,
                        ],
                    )
                    current = cursor.fetchone()[-1]
            except BaseException as error:
                atomic.__exit__(type(error), error, error.__traceback__)
                raise
        except DatabaseError as error:
            _unreachable_until = time.monotonic() + settings.REPLICA_RETRY_SECONDS
            with contextlib.suppress(Exception):
                replica.close()
            _fallback("unreachable", error)
            return False
        if not current:
            atomic.__exit__(None, None, None)
            _fallback("behind", f"organisation {organisation} wrote at {required}, not yet replayed")
            return False
        replica.errors_occurred = False
        self._atomic, self._primary, self.active, self.used = atomic, connections["default"], True, True
        connections["default"] = replica
        return True

    def enter_for(self, principal) -> bool:
        """`enter` with an API caller's tenant, as its authentication set it on the primary."""
        steward = principal.agent is None and principal.is_steward
        return self.enter(organisation_id=principal.organisation.pk, cross_tenant=STEWARD if steward else "")

    def leave(self) -> bool:
        """Give the request its primary connection back, ending the standby's transaction. True when the standby
        failed during the read, so the primary must answer it again (from now on it does)."""
        global _unreachable_until
        if not self.active:
            return False
        assert self._primary is not None  # kept by `enter`
        connections["default"] = self._primary
        self.active = False
        replica = connections[REPLICA]
        failed = replica.errors_occurred
        try:
            self._atomic.__exit__(None, None, None)  # type: ignore[union-attr]
        except DatabaseError:
            failed = True
        if failed:
            with contextlib.suppress(Exception):
                replica.close()
            _unreachable_until = time.monotonic() + settings.REPLICA_RETRY_SECONDS
            _fallback("failed", f"{self.request.method} {self.request.path}")
            self.failed = self.declined = True
            rewind_body(self.request)
        return failed


def body_kept(request: HttpRequest) -> bool:
    """Keep the request's body, so the primary can read it again if the standby fails; False when it was
    already streamed past (then only the primary answers)."""
    try:
        request.body  # noqa: B018 - reading it keeps it (within DATA_UPLOAD_MAX_MEMORY_SIZE)
    except (RawPostDataException, RequestDataTooBig):
        return False
    return True


def rewind_body(request: HttpRequest) -> None:
    """Let the request's body be read again by the primary's answer (it was read whole before, or is empty)."""
    body = request.__dict__.get("_body")
    if body is not None:
        request._stream = io.BytesIO(body)
        request._read_started = False  # type: ignore[attr-defined]


def standby_of(request: HttpRequest) -> StandbyRead | None:
    """The request's standby read, if a standby is configured (the tenant middleware attached it)."""
    return getattr(request, "standby_read", None)
