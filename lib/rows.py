"""Model instances from hand-written SQL kept compiled, built as the ORM builds them.

The statements every request sends (the token read, the place read) are
strings made once at import: Django's compiler then costs nothing per
request. `ModelColumns` gives such a statement its select list from the
model's own fields, so a field added to the model is read too, and turns the
row's slice back into an instance with `Model.from_db` after the fields'
database converters, the ORM's own path. `SessionPrepared` keeps such a
statement planned on the server too: PREPAREd once per database session and
EXECUTEd by name after, so PostgreSQL plans it once instead of on every call.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg import errors as psycopg_errors

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=models.Model)


class ModelColumns(Generic[ModelT]):
    """A model's concrete columns under one table alias: the select list, and the instance from a row."""

    def __init__(self, model: type[ModelT], alias: str):
        self.model = model
        self.fields = list(model._meta.concrete_fields)
        self.names = [field.attname for field in self.fields]
        self.select = ", ".join(f'{alias}."{field.column}"' for field in self.fields)
        # Per database vendor: (index, converters, the column they are given), only for fields that have any.
        self._converters: dict[str, list[tuple[int, list, Any]]] = {}

    def __len__(self) -> int:
        return len(self.fields)

    def _converters_for(self, connection: BaseDatabaseWrapper) -> list[tuple[int, list, Any]]:
        known = self._converters.get(connection.vendor)
        if known is None:
            known = []
            for index, field in enumerate(self.fields):
                column: Any = field.get_col(field.model._meta.db_table)
                found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
                if found:
                    known.append((index, found, column))
            self._converters[connection.vendor] = known
        return known

    def build(self, row: Sequence, start: int, connection: BaseDatabaseWrapper) -> ModelT:
        """The instance whose columns are `row[start:start + len(self)]`, as read from `connection`."""
        values = list(row[start : start + len(self.fields)])
        for index, converters, column in self._converters_for(connection):
            for converter in converters:
                values[index] = converter(values[index], column, connection)
        return self.model.from_db(connection.alias, self.names, values)


def numbered(body: str) -> str:
    """A statement's `%s` placeholders as PREPARE's `$1`, `$2`, ... in order (its text holds no other `%`)."""
    if body.replace("%s", "").count("%"):
        raise ValueError("a prepared statement's body holds only %s placeholders, no other %")
    counter = itertools.count(1)
    return re.sub("%s", lambda _: f"${next(counter)}", body)


class SessionPrepared:
    """One statement PREPAREd once per database session, then EXECUTEd by name: planned once, not per call.

    PostgreSQL keeps a prepared statement for the session, whatever becomes of
    the transaction that prepared it (a rollback keeps it), and chooses a
    generic plan after its first executions; a new connection is a new session
    and prepares again. A session's first call sends the PREPARE in the same
    round trip as its EXECUTE (`sql`); `sent` records the session prepared once
    that round trip has succeeded. A first round trip that failed may have
    prepared it or not, so the session's next one prepares it under a new name;
    a statement the session lost (a `DEALLOCATE` or `DISCARD` behind its back)
    fails that call, logged, and the next prepares it again. A pooler that hands
    one client's statements to several server sessions (PgBouncer's transaction
    mode) breaks that, so where the database is configured as Django asks for one
    (`DISABLE_SERVER_SIDE_CURSORS`), the statement is sent whole on every call.
    """

    def __init__(self, name: str, body: str, types: Sequence[str]):
        self.name = name
        self.body = body
        self._declared = f"({', '.join(types)}) AS {numbered(body)}"
        self._arguments = f"({', '.join(['%s'] * len(types))})"
        # Per driver connection (a session): the name its statement has there, and whether it is prepared.
        self._sessions: weakref.WeakKeyDictionary[Any, tuple[str, bool]] = weakref.WeakKeyDictionary()
        self._renamed = itertools.count(2)

    def sql(self, connection: BaseDatabaseWrapper) -> tuple[str, bool]:
        """What to send on `connection` (open): the EXECUTE, after the PREPARE where the session has none; and
        whether the PREPARE is sent (its result comes first). Behind a transaction pooler: the statement itself."""
        if connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS"):
            return self.body, False
        name, prepared = self._sessions.get(connection.connection, (self.name, False))
        if prepared:
            return f"EXECUTE {name}{self._arguments}", False
        return f"PREPARE {name}{self._declared}; EXECUTE {name}{self._arguments}", True

    @contextlib.contextmanager
    def sent(self, connection: BaseDatabaseWrapper, preparing: bool) -> Iterator[None]:
        """Around the round trip that sends what `sql` answered: what the session holds after it."""
        session = connection.connection
        name, _ = self._sessions.get(session, (self.name, False))
        try:
            yield
        except Exception as error:
            if preparing:  # it may be prepared under this name or not: the next round trip uses another
                self._sessions[session] = (f"{self.name}_{next(self._renamed)}", False)
                logger.warning("%s: the round trip preparing it failed (%s); prepared again next", name, error)
            elif isinstance(error.__cause__, psycopg_errors.InvalidSqlStatementName):
                self._sessions[session] = (name, False)
                logger.warning("%s: the session lost its prepared statement; prepared again next", name)
            raise
        if preparing:
            self._sessions[session] = (name, True)
