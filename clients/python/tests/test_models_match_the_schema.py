"""The client's typed models and keyword arguments match the API's schema: the committed `openapi.yaml`
when there is one, else the schema the code generates. A component the client mirrors that the schema lacks is
a failure, never a skip (the last tests check the checks against a scratch schema)."""

from __future__ import annotations

import copy
import inspect
import typing
from pathlib import Path

import pytest
import yaml
from archivist_client import Archivist
from archivist_client import models as m

COMMITTED = Path(__file__).resolve().parents[3] / "openapi.yaml"


@pytest.fixture(scope="module")
def components():
    if COMMITTED.exists():
        schema = yaml.safe_load(COMMITTED.read_text())
    else:
        from drf_spectacular.generators import SchemaGenerator

        schema = SchemaGenerator().get_schema(request=None, public=True)
    return schema["components"]["schemas"]


def component_of(components: dict, name: str) -> dict:
    assert name in components, f"{name} is not in the schema"
    return components[name]


def check_model(model, components: dict) -> None:
    component = component_of(components, model.schema_name)
    properties = set(component.get("properties", {}))
    fields = set(model.model_fields)
    assert fields <= properties, f"{model.__name__} has fields the schema lacks: {sorted(fields - properties)}"
    required = set(component.get("required", []))
    assert required <= fields, f"{model.__name__} lacks required fields: {sorted(required - fields)}"
    if model is not m.Place:
        # An answer's field is required in the model exactly when the schema says the server always sends it.
        assert {name for name, info in model.model_fields.items() if info.is_required()} <= required
    # A field the server may send as null must take None, or parsing the answer raises.
    properties = component.get("properties", {})
    nullable = {name for name in fields if properties[name].get("nullable")}
    refusing_none = sorted(name for name in nullable if not takes_none(model.model_fields[name].annotation))
    assert not refusing_none, f"{model.__name__} refuses null in fields the schema says may be null: {refusing_none}"


def takes_none(annotation) -> bool:
    return annotation is typing.Any or type(None) in typing.get_args(annotation)


@pytest.mark.parametrize("model", [*m.ANSWERS, m.Place], ids=lambda model: model.__name__)
def test_each_model_has_the_fields_of_its_schema_component(model, components):
    check_model(model, components)


REQUESTS = [
    ("remember", "RememberInputRequest", ("idempotency_key",)),
    ("recall", "RecallInputRequest", ()),
    ("render", "RenderInputRequest", ()),
    ("correct", "SupersedeInputRequest", ("memory_id", "idempotency_key")),
    ("forget", "ForgetInputRequest", ("memory_id", "idempotency_key")),
    ("subject_erase", "SubjectEraseInputRequest", ("subject_type", "subject_id", "idempotency_key")),
    ("submit_claim", "ClaimInputRequest", ("idempotency_key",)),
]


def keywords(method) -> dict[str, bool]:
    """Each keyword a method takes, and whether it may be left out; `**fields: Unpack[SomeTypedDict]` counts as
    the TypedDict's keys."""
    found = {}
    for name, parameter in inspect.signature(method).parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            (fields,) = typing.get_args(typing.get_type_hints(method)[name])
            found |= {key: key in fields.__optional_keys__ for key in typing.get_type_hints(fields)}
        elif name != "self":
            found[name] = parameter.default is not inspect.Parameter.empty
    return found


def check_method(method: str, component_name: str, outside_the_body: tuple[str, ...], components: dict) -> None:
    component = component_of(components, component_name)
    parameters = {
        name: optional
        for name, optional in keywords(getattr(Archivist, method)).items()
        if name not in outside_the_body
    }
    properties = set(component.get("properties", {}))
    assert set(parameters) <= properties, sorted(set(parameters) - properties)
    # A field the API requires is a required keyword, except the place, which the client's default may give.
    required = set(component.get("required", [])) - {"place"}
    optional = {name for name, is_optional in parameters.items() if is_optional}
    assert not (required & optional), sorted(required & optional)
    # Every field of the request can be given (the claim's claimed admission is left to the API's default).
    assert properties - set(parameters) <= {"admission"}, sorted(properties - set(parameters))


@pytest.mark.parametrize(("method", "component_name", "outside_the_body"), REQUESTS, ids=lambda v: str(v))
def test_each_method_takes_the_fields_of_its_request(method, component_name, outside_the_body, components):
    check_method(method, component_name, outside_the_body, components)


def scratch(components: dict, change) -> dict:
    copied = copy.deepcopy(components)
    change(copied)
    return copied


def test_a_component_missing_from_the_schema_fails_the_checks(components):
    check_model(m.Place, components)  # the positive control: the real schema passes
    check_method("forget", "ForgetInputRequest", ("memory_id", "idempotency_key"), components)
    without_place = scratch(components, lambda c: c.pop(m.Place.schema_name))
    with pytest.raises(AssertionError, match="is not in the schema"):
        check_model(m.Place, without_place)
    without_forget = scratch(components, lambda c: c.pop("ForgetInputRequest"))
    with pytest.raises(AssertionError, match="ForgetInputRequest is not in the schema"):
        check_method("forget", "ForgetInputRequest", ("memory_id", "idempotency_key"), without_forget)


def renamed(components: dict, component_name: str, field: str) -> dict:
    def rename(copied):
        component = copied[component_name]
        component["properties"][f"{field}_renamed"] = component["properties"].pop(field)
        component["required"] = [name for name in component.get("required", []) if name != field]

    return scratch(components, rename)


def test_a_field_the_schema_makes_nullable_fails_the_checks_until_the_model_takes_none(components):
    check_model(m.Place, components)  # the positive control: the real schema passes

    def make_channel_nullable(copied):
        copied[m.Place.schema_name]["properties"]["channel"]["nullable"] = True

    with pytest.raises(AssertionError, match="refuses null in fields the schema says may be null: \\['channel'\\]"):
        check_model(m.Place, scratch(components, make_channel_nullable))


def test_a_person_not_yet_invited_parses_with_no_username():
    person = m.Person.model_validate(
        {
            "id": "6f1c1d9e-2a55-4b8e-9a43-7c1e0c3f6b10",
            "handle": "mona",
            "username": None,
            "display_name": "Mona",
            "can_sign_in": False,
            "active": True,
            "created_at": "2026-12-02T09:00:00Z",
        }
    )
    assert person.username is None and person.handle == "mona"


def test_a_field_renamed_in_the_schema_fails_the_checks(components):
    with pytest.raises(AssertionError, match="fields the schema lacks: \\['channel'\\]"):
        check_model(m.Place, renamed(components, m.Place.schema_name, "channel"))
    with pytest.raises(AssertionError, match="reason"):
        check_method(
            "forget",
            "ForgetInputRequest",
            ("memory_id", "idempotency_key"),
            renamed(components, "ForgetInputRequest", "reason"),
        )
