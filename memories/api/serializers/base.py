"""What every input and output shape shares: strict inputs, the place and body fields, and how outputs are built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import serializers

from accounts.auth import PRINCIPAL_FIELDS, refuse_principal_fields
from lib.fenced_block import WHO
from lib.fields import harden, json_type_problem
from lib.hot_path import FieldsBuiltOnce
from lib.text import surrogate_path
from memories.models import BODY_MAX_CHARS
from memories.places import channel_problem

TURN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$"
MAX_TTL_DAYS = 3650
LONE_SURROGATE = "Holds a lone surrogate (an unpaired \\ud800-\\udfff escape); text must be valid Unicode."


class StrictSerializer(FieldsBuiltOnce):
    """The base of every JSON input: strict about names, types and text, each refusal naming its field.

    - fields it does not know, and fields naming the tenant or owner, are refused by name;
    - a string (or key) holding a lone surrogate, at any depth, is refused by its path;
    - a value of the wrong JSON type is refused, never coerced (`lib.fields`);
    - every text field refuses control characters, and the fields listed in
      `identifier_fields` (ids and names) refuse invisible characters too.
    """

    identifier_fields: tuple[str, ...] = ()
    unknown_field_message = ""

    def prepare_field(self, name: str, field: serializers.Field) -> serializers.Field:
        return harden(field, identifier=name in self.identifier_fields)

    def to_internal_value(self, data):
        if self.parent is None:
            where = surrogate_path(data)
            if where:
                raise serializers.ValidationError({where: [LONE_SURROGATE]})
        if isinstance(data, dict):
            if self.parent is None:
                refuse_principal_fields(data)
            unknown = sorted(set(data) - set(self.fields) - set(PRINCIPAL_FIELDS if self.parent is None else ()))
            if unknown:
                takes = ", ".join(sorted(self.fields))
                message = self.unknown_field_message or f"Unknown field; this request takes {takes}."
                raise serializers.ValidationError({name: [message] for name in unknown})
            wrong = {}
            for name, field in self.fields.items():
                if name in data and not field.read_only:
                    problem = json_type_problem(field, data[name])
                    if problem:
                        wrong[name] = [problem] if isinstance(problem, str) else problem
            if wrong:
                raise serializers.ValidationError(wrong)
        return super().to_internal_value(data)


def refuse_bad_channel(value: str) -> None:
    problem = channel_problem(value)
    if problem:
        raise serializers.ValidationError(problem)


def channel_field(**extra) -> serializers.CharField:
    """A channel id: printable, no slashes, at most 200 characters; refused by name, never trimmed."""
    return serializers.CharField(
        max_length=200,
        trim_whitespace=False,
        validators=[refuse_bad_channel],
        help_text="The channel's id in your chat system: printable, no slash, at most 200 characters.",
        **extra,
    )


def place_kind_field(help_text: str) -> serializers.ChoiceField:
    """A place's kind: dm, private or public, refused by name otherwise."""
    return serializers.ChoiceField(
        choices=["dm", "private", "public"],
        help_text=help_text,
        error_messages={"invalid_choice": "{input!r} is not a place kind; use dm, private or public."},
    )


def people_field(help_text: str, **extra) -> serializers.ListField:
    """The people of a place, by handle or username: at most 500."""
    return serializers.ListField(
        child=serializers.CharField(max_length=150), max_length=500, help_text=help_text, **extra
    )


class PlaceSerializer(StrictSerializer):
    identifier_fields = ("channel", "people")

    channel = channel_field()
    kind = place_kind_field("dm, private or public: decides which scopes may be recalled and written here.")
    people = people_field(
        "Handles or usernames of the people here. The place's record decides who is in it: a DM's one "
        "person, a private channel's members; a public channel is open to the whole organisation. Where "
        "this differs from the record, the record is used and `notice` says so.",
        required=False,
        default=list,
    )


def body_field(**extra) -> serializers.CharField:
    return serializers.CharField(
        max_length=BODY_MAX_CHARS,
        help_text=f"The fact, at most {BODY_MAX_CHARS} characters; refused, never cut. Rendered clamped to 500.",
        error_messages={
            "max_length": f"The body is longer than {BODY_MAX_CHARS} characters; it is refused, never cut.",
            "blank": "A memory needs text; the body is empty or only whitespace.",
        },
        **extra,
    )


# --- Outputs ----------------------------------------------------------------------
#
# Each output serializer builds the response it documents, from the row it is given (a model, or a
# recall row as a dict): `MemoryOutputSerializer(memory, context={"now": now}).data`.


# The base of every output serializer: how a response is built is chosen here, once. No class docstring:
# the schema would take it as the description of every serializer deriving from this one.
class OutputSerializer(FieldsBuiltOnce):
    pass


def derived(field_class: type[serializers.Field], compute: Callable[[Any, dict], Any], **kwargs) -> serializers.Field:
    """A field worked out by `compute(value, context)`, documented as `field_class`; the value is the whole
    row unless `source` names one attribute."""

    def to_representation(self, value):
        return compute(value, self.context)

    kwargs.setdefault("source", "*")
    return type("DerivedField", (field_class,), {"to_representation": to_representation})(**kwargs)


class Annotated:
    """A row with what its answer adds beside the row's own fields (a remember's scope reason, a read's chain)."""

    def __init__(self, row, **extra):
        self._row = row
        self.__dict__.update(extra)

    def __getattr__(self, name):
        return getattr(self._row, name)


def memory_state(memory, now) -> str:
    if memory.redacted_at is not None:
        return "erased"
    if memory.superseded_by_id is not None:
        return "superseded"
    if memory.expires_at is not None and memory.expires_at <= now:
        return "expired"
    return "live"


def written_field(**kwargs) -> serializers.Field:
    """How its author wrote a fact, in words: noted by a person, or inferred by an agent."""
    return derived(serializers.CharField, lambda author, context: WHO.get(author, ""), source="author", **kwargs)
