"""The request path's measured shortcuts, each behind `settings.HOT_PATH` (default on) with a plain Django fallback
that gives the same answers; `bench/request_overhead.py` measures each against its fallback (docs/benchmarks.md)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from rest_framework import fields as drf_fields
from rest_framework import serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.relations import PKOnlyObject

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=models.Model)


def enabled() -> bool:
    """Whether the request path takes its shortcuts (`settings.HOT_PATH`), or Django's plain way."""
    return getattr(settings, "HOT_PATH", True)


# --- The token read (`accounts.auth.token_authenticate`): the hash setting, the token with its agent and
# organisation, and the tenant in one round trip of SQL made once, in place of three ORM statements. It buys
# 5.7 ms of a recall's and 6.3 ms of a remember's per-request work (16% of the default recall's p50, 34% of the
# remember's), pairwise.


class ModelColumns(Generic[ModelT]):
    """A model's concrete columns under one table alias: the select list of hand-written SQL, and the instance
    built from a row as the ORM builds it (`from_db`, after the fields' database converters)."""

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


# --- The place read with the token (`memories.api.base.MemoryApi.read_with_token`): the place a JSON body names,
# read ahead of DRF's parser and sent in the token's round trip, one round trip less. It buys 3.6 ms of a
# recall's and 5.3 ms of a remember's per-request work (10% of the default recall's p50, 28% of the remember's),
# pairwise.


@dataclass(frozen=True)
class ReadWithToken:
    """A view's read sent in its token's round trip, after the token's statement and under the tenant it set
    (`archivist_tenant()`): `take` is given its row (None when none) if the token was usable."""

    sql: str
    params: tuple
    take: Callable[[Sequence | None], None]


READ_AHEAD_BYTES = 65536  # a turn's body is far smaller; a batch's is not read twice


def body_read_ahead(request) -> dict | None:
    """A small JSON object body read before DRF's parser (once a request), for a read sent with the token; None
    if it is anything else. Whatever it holds, the parser and the serializers still refuse it later by name."""
    raw_length = request.META.get("CONTENT_LENGTH") or "0"
    length = int(raw_length) if raw_length.isdigit() else 0
    if not request.content_type.startswith("application/json") or not 0 < length <= READ_AHEAD_BYTES:
        return None
    cached = request._request.__dict__.get("archivist_body_ahead", False)
    if cached is not False:
        return cached
    try:
        data = json.loads(request._request.body)
    except Exception as error:  # noqa: BLE001 - any body read ahead in vain is left to the parser
        logger.info("body not read ahead (%s): the body is read by the parser", type(error).__name__)
        data = None
    data = data if isinstance(data, dict) else None
    request._request.archivist_body_ahead = data
    return data


# --- Serializer fields built once (`FieldsBuiltOnce`): each class's fields built once per process and copied
# shallowly per instance, in place of DRF's deep copy of every declared field for every serializer built. It
# buys 0.9-1.9 ms of a remember (4.6-11% of its p50 over three runs) and 0.5-1.2 ms of a recall, pairwise.

# Per serializer class: its fields as built once, never bound (each instance binds its own copies).
_PROTOTYPES: dict[type, dict[str, serializers.Field]] = {}
_BUILDING = threading.RLock()  # a class's first instances, built at once by several threads


def field_copy(prototype: serializers.Field) -> serializers.Field:
    """A new field object with the prototype's settings: attributes copied, its child copied and re-parented."""
    # Not constructed again: binding, `parent` and `context` stay the copy's own; validators, choices and
    # messages, which no request changes, are shared.
    field = object.__new__(type(prototype))
    state: dict[str, Any] = field.__dict__
    state.update(prototype.__dict__)
    state.pop("fields", None)  # a nested serializer binds fields of its own when first read
    if "_validators" in state:
        state["_validators"] = list(state["_validators"])  # a copy's appended validator stays its own
    child = state.get("child")
    if isinstance(child, serializers.Field):  # a ListField's, DictField's or ListSerializer's item
        state["child"] = field_copy(child)
        state["child"].parent = field
    return field


def prototype_ready(field: serializers.Field) -> serializers.Field:
    """Work DRF does lazily on first use, done once on the prototype so its copies share it."""
    field.validators  # noqa: B018 - computes and keeps the field's validator list
    child = getattr(field, "child", None)
    if isinstance(child, serializers.Field):
        prototype_ready(child)
    return field


# No class docstring: the schema would take it as the description of every serializer deriving from this one.
class FieldsBuiltOnce(serializers.Serializer):
    def prepare_field(self, name: str, field: serializers.Field) -> serializers.Field:
        """A class's hook run on each field it builds (once per process on the hot path)."""
        return field

    def to_representation(self, instance):
        # The same fields for every instance of a class: each row is read by the class's plan (`represented`).
        return represented(self, instance) if enabled() else super().to_representation(instance)

    def get_fields(self):
        if not enabled():  # DRF's deep copy of the declared fields, for every instance
            return {name: self.prepare_field(name, field) for name, field in super().get_fields().items()}
        prototypes = _PROTOTYPES.get(type(self))
        if prototypes is None:
            with _BUILDING:
                prototypes = _PROTOTYPES.get(type(self))
                if prototypes is None:
                    built = super().get_fields()
                    prototypes = {name: prototype_ready(self.prepare_field(name, f)) for name, f in built.items()}
                    _PROTOTYPES[type(self)] = prototypes
        return {name: field_copy(prototype) for name, prototype in prototypes.items()}


# --- Answers read by a plan (`represented`), and negotiation answered at once (`OneRendererNegotiation`): about
# 0.3-0.7 ms of a recall each, under 5%, kept because removing them with the rest took the default recall past
# the 3% it may lose (docs/benchmarks.md, "The hot path").
#
# `represented` gives the same dict as DRF's `Serializer.to_representation`, without its per-row walk.
# DRF walks a serializer's fields through a generator for every row and reads each value through
# `fields.get_attribute`, whose `isinstance(instance, Mapping)` is an abstract-class check per value. A plain
# value is read at once here; anything else (a missing key, a callable, a dotted source, an error) is read by
# the field's own `get_attribute`, so defaults, `SkipField` and DRF's messages stay DRF's.

# How a field's value is read: the row itself (`source="*"`), one key or attribute, or the field's own reader.
WHOLE_ROW, ONE_KEY, FIELDS_OWN = "row", "key", "own"

# Per serializer class: (field name, how it is read, the key or attribute) of each readable field, in order.
_PLANS: dict[type, list[tuple[str, str, str | None]]] = {}
# Per row type other than dict: whether it is read by attribute (it is no mapping).
_OBJECT_TYPES: dict[type, bool] = {}


def read_as(field: drf_fields.Field) -> tuple[str, str | None]:
    """How `field`'s value is read: only a field that reads with DRF's own `Field.get_attribute` is read here."""
    if type(field).get_attribute is not drf_fields.Field.get_attribute:
        return FIELDS_OWN, None
    if not field.source_attrs:
        return WHOLE_ROW, None
    if len(field.source_attrs) == 1:
        return ONE_KEY, field.source_attrs[0]
    return FIELDS_OWN, None  # a dotted source: DRF's walk, with its handling of each step


def plan_of(serializer) -> list[tuple[str, str, str | None]]:
    """The class's plan; its fields are the same for every instance (`FieldsBuiltOnce`)."""
    plan = _PLANS.get(type(serializer))
    if plan is None:
        plan = [(name, *read_as(field)) for name, field in serializer.fields.items() if not field.write_only]
        _PLANS[type(serializer)] = plan
    return plan


def keyed(row: Any) -> bool | None:
    """How a row's values are read: True by key (a dict), False by attribute (an object that is no mapping), None
    by DRF (any other mapping: a dict subclass's attributes could shadow its keys). Checked once per type."""
    kind = type(row)
    if kind is dict:
        return True
    by_attribute = _OBJECT_TYPES.get(kind)
    if by_attribute is None:
        by_attribute = _OBJECT_TYPES[kind] = not isinstance(row, Mapping)
    return False if by_attribute else None


def value_of(field: drf_fields.Field, row: Any, how: str, key: str | None, by_key: bool | None) -> Any:
    """What DRF's `field.get_attribute(row)` answers, read at once when it is a plain value."""
    if how == WHOLE_ROW:
        return row
    if how == ONE_KEY and by_key is not None:
        try:
            value = row[key] if by_key else getattr(row, key)  # type: ignore[arg-type]  # set for ONE_KEY
        except Exception:  # noqa: BLE001 - missing or failing: the field's own reader decides, as DRF does
            return field.get_attribute(row)
        if not callable(value):
            return value
    return field.get_attribute(row)  # a callable DRF calls, another mapping, or a reader of the field's own


def represented(serializer, row: Any) -> dict:
    """`Serializer.to_representation(row)`, field for field, read by the class's plan."""
    answer: dict[str, Any] = {}
    fields = serializer.fields
    by_key = keyed(row)
    for name, how, key in plan_of(serializer):
        field = fields[name]
        try:
            value = value_of(field, row, how, key, by_key)
        except drf_fields.SkipField:
            continue
        # As DRF: None is answered as None without the field, and a related primary key is checked by its pk.
        if (value.pk if isinstance(value, PKOnlyObject) else value) is None:
            answer[name] = None
        else:
            answer[name] = field.to_representation(value)
    return answer


class OneRendererNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, answered at once where its answer is plain: one renderer, no `format` asked for, and an
    Accept header of anything or of that renderer's own type (what clients send); the rest is DRF's."""

    def select_renderer(self, request, renderers, format_suffix=None):
        accept = request.META.get("HTTP_ACCEPT", "*/*")
        override = self.settings.URL_FORMAT_OVERRIDE
        if (
            enabled()
            and len(renderers) == 1
            and format_suffix is None
            and accept in ("*/*", renderers[0].media_type)
            and not (override and override in request.query_params)
        ):
            return renderers[0], renderers[0].media_type  # DRF's answer to either header
        return super().select_renderer(request, renderers, format_suffix)
