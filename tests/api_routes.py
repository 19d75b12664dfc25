"""Every API endpoint, derived from the URL conf: a new endpoint is in these lists without a test changing."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.urls import URLPattern
from django.urls.converters import UUIDConverter

from config.urls import api_v1

API_PREFIX = "/api/v1/"
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Endpoint:
    """One method of one route, with its path parameters' names and whether each is free text (`str`)."""

    method: str
    route: str
    name: str
    parameters: tuple[tuple[str, bool], ...]

    def path(self, **values: str) -> str:
        """The route with each parameter filled: `values` by name, else a fresh uuid or a plain id."""
        path = self.route
        for parameter, text in self.parameters:
            value = values.get(parameter, "plain-id" if text else str(uuid.uuid4()))
            path = path.replace(f"<{'str' if text else 'uuid'}:{parameter}>", value)
        return API_PREFIX + path

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.route}"


def api_endpoints() -> list[Endpoint]:
    endpoints = []
    for pattern in api_v1:
        assert isinstance(pattern, URLPattern)
        view = pattern.callback.view_class  # type: ignore[attr-defined]
        converters = pattern.pattern.converters  # type: ignore[attr-defined]
        parameters = tuple((name, not isinstance(converter, UUIDConverter)) for name, converter in converters.items())
        for method in METHODS:
            if hasattr(view, method):
                endpoints.append(Endpoint(method, str(pattern.pattern), pattern.name or "", parameters))
    return endpoints
