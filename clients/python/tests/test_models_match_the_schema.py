"""The client's typed models and keyword arguments match the API's schema: the committed `openapi.yaml`
when there is one, else the schema the code generates."""

from __future__ import annotations

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


@pytest.mark.parametrize("model", [*m.ANSWERS, m.Place], ids=lambda model: model.__name__)
def test_each_model_has_the_fields_of_its_schema_component(model, components):
    component = components.get(model.schema_name)
    if component is None:
        pytest.skip(f"{model.schema_name} is not in this schema (its endpoint is not merged here)")
    properties = set(component.get("properties", {}))
    fields = set(model.model_fields)
    assert fields <= properties, f"{model.__name__} has fields the schema lacks: {sorted(fields - properties)}"
    required = set(component.get("required", []))
    assert required <= fields, f"{model.__name__} lacks required fields: {sorted(required - fields)}"
    if model is not m.Place:
        # An answer's field is required in the model exactly when the schema says the server always sends it.
        assert {name for name, info in model.model_fields.items() if info.is_required()} <= required


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


@pytest.mark.parametrize(("method", "component_name", "outside_the_body"), REQUESTS, ids=lambda v: str(v))
def test_each_method_takes_the_fields_of_its_request(method, component_name, outside_the_body, components):
    component = components.get(component_name)
    if component is None:
        pytest.skip(f"{component_name} is not in this schema")
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
