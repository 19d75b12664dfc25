"""Model instances from hand-written SQL kept compiled, built as the ORM builds them.

The statements every request sends (the token read, the place read) are
strings made once at import: Django's compiler then costs nothing per
request. `ModelColumns` gives such a statement its select list from the
model's own fields, so a field added to the model is read too, and turns the
row's slice back into an instance with `Model.from_db` after the fields'
database converters, the ORM's own path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

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
