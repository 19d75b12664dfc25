"""One row's INSERT as the ORM writes it, made once per model, for statements that write more than the row.

A remember writes its memory and receipt (and counts its writer's cap) in one
statement, and an idempotency key is claimed by one `INSERT ... ON CONFLICT`:
these build those statements' parts from the model, so a field added to a model
is written by them as `save()` writes it (a test holds the text to the ORM's).
"""

from __future__ import annotations

import functools

from django.db import connection, models


@functools.cache
def _insert_sql(model: type[models.Model], *, with_pk: bool, ignore_conflicts: bool) -> tuple[str, tuple]:
    """The INSERT of one row of `model` as the ORM writes it, made once: (its SQL, the fields of its parameters)."""
    meta = model._meta
    fields = tuple(
        field
        for field in meta.local_concrete_fields
        if not field.generated and (field is not meta.auto_field or with_pk)
    )
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(str(field.column)) for field in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    return sql + (" ON CONFLICT DO NOTHING" if ignore_conflicts else ""), fields


def insert_statement(row: models.Model, *, ignore_conflicts: bool = False) -> tuple[str, list]:
    """The INSERT of one new row, as SQL (made once per model) and parameters, with its automatic fields (times)
    set on it as `save()` sets them: for a statement that writes more than the row, or reads with it, in one
    round trip. Plain values only: an expression, or a field with its own placeholder, is refused."""
    sql, fields = _insert_sql(type(row), with_pk=row.pk is not None, ignore_conflicts=ignore_conflicts)
    values = [column.pre_save(row, True) for column in fields]
    for column, value in zip(fields, values, strict=True):
        if hasattr(value, "resolve_expression") or hasattr(column, "get_placeholder"):
            raise ValueError(f"{column} is not a plain value; save() the row instead")
    return sql, [
        column.get_db_prep_save(value, connection=connection) for column, value in zip(fields, values, strict=True)
    ]


def inserted(row: models.Model) -> None:
    """Mark a row written by one of those statements as saved, as `save()` would."""
    row._state.adding = False
    row._state.db = connection.alias


def insert_where(statement: str, source: str) -> str:
    """`INSERT INTO t (...) VALUES (...)` as `INSERT INTO t (...) SELECT ... <source>`: the row is inserted once
    for each row `source` (a `FROM` or a `WHERE`) yields, so none when it yields none."""
    head, values = statement.split(" VALUES ", 1)
    if not (values.startswith("(") and values.endswith(")")):
        raise ValueError(f"not a one-row INSERT: {statement[:200]}")
    return f"{head} SELECT {values[1:-1]} {source}"
