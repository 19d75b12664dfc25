"""Strict input fields for the JSON APIs: a value of the wrong JSON type is refused, never coerced."""

# DRF coerces by default: `"body": 123` becomes the text "123", `"pinned": "yes"`
# becomes true and `"limit": "5"` becomes 5. A caller that sent the wrong type
# has a bug, and storing its guess hides it. `StrictSerializer`
# (memories.api.serializers) applies `json_type_problem` to every declared field, and
# `harden` gives every text field the control-character rule (and, for ids and
# names, the invisible-character rule) as a validator whose pattern the schema
# shows. Dates and times are RFC 3339 within 1900–2999, in validation and in the
# schema alike (and a time once in UTC: `lib.times`), so no date at the calendar's ends reaches date
# arithmetic.

from __future__ import annotations

import re
from datetime import date, datetime

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from lib.text import control_problem, invisible_problem
from lib.times import DATE_RANGE, datetime_range_problem

YEARS = r"(?:19\d\d|2\d\d\d)"
_MONTH_DAY = r"(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)"
_LEAP_DAY = r"(?:(?:19|2\d)(?:0[48]|[2468][048]|[13579][26])|2000|2400|2800)-02-29"
_DATE = rf"(?:{YEARS}-{_MONTH_DAY}|{_LEAP_DAY})"
_TIME = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,6})?"
_ZONE = r"(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)"
DATE_PATTERN = rf"^{_DATE}$"
DATETIME_PATTERN = rf"^{_DATE}T{_TIME}{_ZONE}$"
# Characters an id or name may never hold, BMP part, for the schema (the astral tag characters are checked too).
ID_FORBIDDEN = (
    r"\x00-\x1f\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u2064\u2066-\u2069\u3164\ufe00-\ufe0f\ufeff\uffa0"
)
ID_PATTERN = rf"^[^{ID_FORBIDDEN}]*$"
CONTROLS_FORBIDDEN = r"\x00-\x08\x0b-\x1f\x7f-\x9f"


def text_pattern(*, identifier: bool, blank: bool) -> str:
    """The schema's spelling of the text rule; a field that may not be blank must hold a visible character."""
    forbidden = ID_FORBIDDEN if identifier else CONTROLS_FORBIDDEN
    if blank:
        return rf"^[^{forbidden}]*$"
    # Leading whitespace that is not itself a control, then a visible character.
    return rf"^[^\S{forbidden}]*[^\s{forbidden}][^{forbidden}]*$"


_JSON_TYPES = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array"}


def json_type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    for kind, name in _JSON_TYPES.items():
        if type(value) is kind:
            return name
    return type(value).__name__


def _expected(field: serializers.Field) -> tuple[tuple[type, ...], str] | None:
    """The JSON types a field takes, and how to say so; None for a field that takes any JSON."""
    if isinstance(field, serializers.JSONField | serializers.DictField | serializers.Serializer):
        return None  # a nested serializer refuses a non-object itself; JSON fields take any JSON
    if isinstance(field, serializers.BooleanField):
        return (bool,), "a boolean (true or false)"
    if isinstance(field, serializers.IntegerField):
        return (int,), "an integer"
    if isinstance(field, serializers.FloatField):
        return (int, float), "a number"
    if isinstance(field, serializers.ListField):
        return (list,), "an array"
    if isinstance(
        field,
        serializers.CharField
        | serializers.ChoiceField
        | serializers.DateField
        | serializers.DateTimeField
        | serializers.UUIDField,
    ):
        return (str,), "a string"
    return None


def json_type_problem(field: serializers.Field, value) -> str | list | dict | None:
    """Why `value` is the wrong JSON type for `field` (for a list, per item), or None."""
    if value is None and field.allow_null:
        return None
    expected = _expected(field)
    if expected is None:
        return None
    kinds, words = expected
    if type(value) not in kinds:  # exact type: a bool is not an integer in JSON
        return f"Must be {words}, not {json_type_name(value)}."
    if isinstance(field, serializers.CharField) and field.max_length is not None and len(value) > field.max_length:
        # Measured as sent: DRF trims before its own check, so a padded value past the limit would pass.
        return field.error_messages["max_length"].format(max_length=field.max_length)
    if isinstance(field, serializers.ListField):
        problems = {}
        for index, item in enumerate(value):
            problem = json_type_problem(field.child, item)
            if problem:
                problems[index] = [problem] if isinstance(problem, str) else problem
        return problems or None
    return None


class TextRule(RegexValidator):
    """No control characters in a stored text field (and, for ids and names, no invisible ones).

    A RegexValidator so the schema carries the rule as a `pattern`; the message
    names the character and where it is.
    """

    def __init__(self, *, identifier: bool = False, blank: bool = True):
        self.identifier = identifier
        super().__init__(regex=text_pattern(identifier=identifier, blank=blank))

    def __call__(self, value):
        if not isinstance(value, str):
            return
        problem = control_problem(value) or (invisible_problem(value) if self.identifier else None)
        if problem:
            raise serializers.ValidationError(problem, code="text")

    def __eq__(self, other):
        return isinstance(other, TextRule) and other.identifier == self.identifier


def harden(field: serializers.Field, *, identifier: bool = False) -> serializers.Field:
    """Give a text field (and a list of them) the text rule; other fields are returned as they are."""
    target = field.child if isinstance(field, serializers.ListField) else field
    if isinstance(target, serializers.CharField) and not any(isinstance(v, TextRule) for v in target.validators):
        rule = TextRule(identifier=identifier, blank=getattr(target, "allow_blank", True))
        target.validators.append(rule)  # after a RegexField's own, whose pattern the schema then shows
    return field


def _refuse_outside(field: serializers.Field, value: str, pattern: str, what: str) -> None:
    if not isinstance(value, str):
        field.fail("invalid_type", found=json_type_name(value))
    if re.fullmatch(pattern, value) is None:
        raise serializers.ValidationError(f"{value[:40]!r} is not {what}, within {DATE_RANGE}.", code="invalid")


def optional_text(max_length: int, **extra) -> serializers.CharField:
    """A text field a caller may leave out or leave empty (it is then ""), at most `max_length` characters."""
    return serializers.CharField(max_length=max_length, required=False, allow_blank=True, default="", **extra)


@extend_schema_field(
    {
        "type": "string",
        "format": "date-time",
        "pattern": DATETIME_PATTERN,
        "example": "2026-11-30T09:00:00Z",
    }
)
class StrictDateTimeField(serializers.DateTimeField):
    """An RFC 3339 date and time with its offset (`2026-11-30T09:00:00Z`), in 1900–2999."""

    default_error_messages = {"invalid_type": "Must be a string, not {found}."}

    def to_internal_value(self, value) -> datetime:
        _refuse_outside(self, value, DATETIME_PATTERN, "a date and time in the format YYYY-MM-DDThh:mm:ss+hh:mm (or Z)")
        parsed = super().to_internal_value(value)
        problem = datetime_range_problem(parsed)
        if problem:
            raise serializers.ValidationError(problem, code="invalid")
        return parsed


@extend_schema_field({"type": "string", "format": "date", "pattern": DATE_PATTERN, "example": "2026-11-30"})
class StrictDateField(serializers.DateField):
    """A day (`2026-11-30`), in 1900–2999."""

    default_error_messages = {"invalid_type": "Must be a string, not {found}."}

    def to_internal_value(self, value) -> date:
        _refuse_outside(self, value, DATE_PATTERN, "a day in the format YYYY-MM-DD")
        return super().to_internal_value(value)
