"""A row's representation read by a plan made once per serializer class, not by re-walking its fields per row.

DRF's `Serializer.to_representation` walks the serializer's fields through a
generator for every row, and reads each value through `fields.get_attribute`,
whose `isinstance(instance, Mapping)` is an abstract-class check per value: most
of what a recall answer's ten rows cost. `represented` gives the same dict: for
each readable field, in order, a plain value is read at once (`row[key]` of a
dict, `getattr(row, key)` of an object that is no mapping), a `source="*"` field is given the row,
and anything else, or anything that is not plain (a missing key, a callable, an
error), is read by the field's own `get_attribute`, so defaults, `SkipField`
and DRF's messages stay DRF's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import fields as drf_fields
from rest_framework.relations import PKOnlyObject

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
    """The class's plan; its fields are the same for every instance (`lib.api.prebuilt_fields`)."""
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
