"""Request parsers: JSON only, read as sent: too deep, or naming a key twice, is malformed input."""

from __future__ import annotations

import codecs
import json
import logging

from django.conf import settings
from rest_framework import exceptions
from rest_framework.parsers import JSONParser
from rest_framework.utils.json import strict_constant

logger = logging.getLogger(__name__)


class DuplicateKey(ValueError):
    """An object names a key twice: which value was meant is the sender's to say, not the parser's to guess."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def object_without_duplicates(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object's pairs as a dict, refusing a key that appears twice (the standard parser keeps the last)."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return data


class SafeJSONParser(JSONParser):
    """JSON too deep for the parser, NaN or Infinity is malformed input (400), not a server error or a float;
    an object naming a key twice is refused naming the key, rather than read as its last value."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return json.load(
                codecs.getreader(encoding)(stream),
                parse_constant=strict_constant,
                object_pairs_hook=object_without_duplicates,
            )
        except DuplicateKey as duplicate:
            message = "This key appears more than once in one object; send it once."
            raise exceptions.ValidationError({duplicate.key: [message]}) from None
        except RecursionError:
            raise exceptions.ParseError("JSON nested too deeply.") from None
        except ValueError as error:
            raise exceptions.ParseError(f"JSON parse error - {error}") from None
