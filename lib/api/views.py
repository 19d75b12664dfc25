"""The base of every JSON endpoint: JSON only, throttled per principal, errors that name what was wrong."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import exceptions
from rest_framework.views import APIView

from lib import hot_path
from lib.api.body import body_read_within
from lib.api.parsers import SafeJSONParser
from lib.api.rate_gate import PrincipalRateThrottle
from lib.text import identifier_problem

if TYPE_CHECKING:  # only the type: lib imports no app
    from accounts.auth import Principal


def path_problem(value: object) -> str | None:
    """Why a path parameter may not be read (uuids and ints are already parsed), or None."""
    return identifier_problem(value) if isinstance(value, str) else None


class ApiRateThrottle(PrincipalRateThrottle):
    """Per token (an agent) or per person (a session): one noisy caller cannot starve the others."""

    scope = "turn"


class ApiView(APIView):
    parser_classes = [SafeJSONParser]  # too deep, NaN or Infinity: malformed input, not a server error
    throttle_classes = [ApiRateThrottle]
    content_negotiation_class = hot_path.OneRendererNegotiation
    # The most bytes this endpoint's request body may hold; None keeps the API's (DATA_UPLOAD_MAX_MEMORY_SIZE).
    max_request_bytes: int | None = None

    def handle_exception(self, exc):
        if isinstance(exc, exceptions.UnsupportedMediaType):
            exc = exceptions.ValidationError(
                {"Content-Type": [f"Send application/json; {exc.detail}".rstrip(".") + "."]}
            )
        elif isinstance(exc, exceptions.ParseError):
            exc = exceptions.ValidationError({"json": [f"Malformed JSON: {exc.detail}"]})
        return super().handle_exception(exc)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # A path parameter is an id, read as sent: the rule a body's ids follow, or 400 naming it (never a
        # lookup, a header or a log line holding a control character).
        problems = {name: [problem] for name, value in kwargs.items() if (problem := path_problem(value))}
        if problems:
            raise exceptions.ValidationError(problems)
        if self.max_request_bytes is not None:
            body_read_within(request._request, self.max_request_bytes)

    def principal(self) -> Principal:
        """The caller authentication set on the request (`accounts.auth`), never one a body names."""
        principal = getattr(self.request, "principal", None) or getattr(self.request._request, "principal", None)
        if principal is None:
            raise exceptions.NotAuthenticated()
        return principal

    def read_from_standby(self) -> bool:
        """Answer the rest of this request from the standby, under the caller's tenant, where one is configured
        and current for the caller (the tenant middleware's `standby_read`); True when it does. A view calls it
        once what follows only reads; what came before (authentication, a place's record) stayed on the primary."""
        read = getattr(self.request._request, "standby_read", None)
        return read is not None and read.enter_for(self.principal())

    def validated(self, serializer_class, data=None):
        # An empty body parses to {}; a body of JSON null, false or 0 is not an object and is refused.
        serializer = serializer_class(data=self.request.data if data is None else data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data
