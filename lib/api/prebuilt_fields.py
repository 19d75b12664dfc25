"""Serializer fields built once per process, and copied cheaply for each serializer instance.

DRF deep-copies a serializer's declared fields every time one is built: each
field is constructed again from its arguments (its choices, validators and
nested serializers deep-copied too), about 165 copies per recall request.
`FieldsBuiltOnce` builds a class's fields once (`prepare_field` runs then), and
gives each instance shallow copies of them: new field objects, so binding,
`parent`, `context` and every per-request attribute stay the instance's own,
sharing only what no request changes (validators, choices, messages). A
field's `child` (a list's item, a `many=True` serializer's row) is copied the
same way and belongs to its own copy; a nested serializer builds its fields
when first read, from its own class's prototypes.
"""

from __future__ import annotations

import threading
from typing import Any

from rest_framework import serializers

from lib.api.representation import represented

# Per serializer class: its fields as built once, never bound (each instance binds its own copies).
_PROTOTYPES: dict[type, dict[str, serializers.Field]] = {}
_BUILDING = threading.RLock()  # a class's first instances, built at once by several threads


def field_copy(prototype: serializers.Field) -> serializers.Field:
    """A new field object with the prototype's settings: attributes copied, its child copied and re-parented."""
    field = object.__new__(type(prototype))  # not constructed again: the prototype's attributes, shallow
    state: dict[str, Any] = field.__dict__
    state.update(prototype.__dict__)
    state.pop("fields", None)  # a nested serializer binds fields of its own when first read
    if "_validators" in state:
        state["_validators"] = list(state["_validators"])  # a copy's appended validator stays its own
    child = state.get("child")
    if isinstance(child, serializers.Field):  # a ListField's, DictField's or ListSerializer's item
        # Bound to the prototype under the same name: only the parent differs.
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


# Its fields built once per class and copied per instance (the module's docstring). No class docstring: the
# schema would take it as the description of every serializer deriving from this one.
class FieldsBuiltOnce(serializers.Serializer):
    def prepare_field(self, name: str, field: serializers.Field) -> serializers.Field:
        """A class's hook run once on each prototype, before any instance copies it."""
        return field

    def get_fields(self):
        prototypes = _PROTOTYPES.get(type(self))
        if prototypes is None:
            with _BUILDING:
                prototypes = _PROTOTYPES.get(type(self))
                if prototypes is None:
                    built = super().get_fields()  # DRF's deep copy of the declared fields, this once
                    prototypes = {name: prototype_ready(self.prepare_field(name, f)) for name, f in built.items()}
                    _PROTOTYPES[type(self)] = prototypes
        return {name: field_copy(prototype) for name, prototype in prototypes.items()}

    def to_representation(self, instance):
        # The same fields for every instance of a class: each row is read by the class's plan (`represented`).
        return represented(self, instance)
