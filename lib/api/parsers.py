"""Request parsers: JSON only, and JSON too deep to parse is malformed input."""

from __future__ import annotations

import logging

from rest_framework import exceptions
from rest_framework.parsers import JSONParser

logger = logging.getLogger(__name__)


class SafeJSONParser(JSONParser):
    """JSON too deep for the parser is malformed input (400), not a server error (RecursionError)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON nested too deeply.") from None
