"""Paths no route answers: under /api/, a 404 in the one error shape that names a malformed id."""

from __future__ import annotations

import logging

from django.conf import settings
from django.views.decorators.csrf import csrf_exempt
from rest_framework import status

from lib.api.errors import error_json

logger = logging.getLogger(__name__)


_NIL_UUID = "00000000-0000-0000-0000-000000000000"


def _malformed_id(path: str) -> str | None:
    """The name of the id a path would carry if one segment were a well-formed UUID, if any.

    `/api/v1/memories/not-a-uuid` resolves once its last segment is a UUID, to a route
    whose `memory_id` is that segment: so the path was a malformed `memory_id`.
    """
    from django.urls import Resolver404, resolve

    segments = path.split("/")
    for index, segment in enumerate(segments):
        if not segment or segment == _NIL_UUID:
            continue
        trial = "/".join([*segments[:index], _NIL_UUID, *segments[index + 1 :]])
        try:
            match = resolve(trial)
        except Resolver404:
            continue
        if match.func is api_not_found:
            continue
        for name, value in match.kwargs.items():
            if str(value) == _NIL_UUID:
                return name
    return None


def _without_trailing_slash(path: str) -> str | None:
    """The endpoint a path names once its trailing slash goes, if it is one (the API's routes have none)."""
    from django.urls import Resolver404, resolve

    if not path.endswith("/") or path.count("/") < 4:
        return None
    try:
        return path.rstrip("/") if resolve(path.rstrip("/")).func is not api_not_found else None
    except Resolver404:
        return None


@csrf_exempt  # it changes nothing, so a POST without a token learns the path is wrong, not that CSRF failed
def api_not_found(request, *args, **kwargs):
    """Every /api/ path no route takes answers 404 in the one error shape, never an HTML page,
    naming the id when it is one that is malformed (ids are UUIDs)."""
    from django.http import HttpResponsePermanentRedirect
    from django.urls import Resolver404, resolve

    path = request.path_info
    if settings.APPEND_SLASH and not path.endswith("/") and request.method in ("GET", "HEAD"):
        # The catch-all would hide CommonMiddleware's redirect (`/api/docs` to `/api/docs/`).
        try:
            if resolve(f"{path}/").func is not api_not_found:
                return HttpResponsePermanentRedirect(request.get_full_path(force_append_slash=True))
        except Resolver404:
            pass
    name = _malformed_id(path)
    endpoint = _without_trailing_slash(path)
    if endpoint is not None:
        detail, fields = f"No API endpoint at {path}; the endpoint is {endpoint}, without the trailing slash.", {}
    elif name is not None:
        message = f"{name} must be a UUID, such as {_NIL_UUID}; nothing has the id given."
        detail, fields = f"{name}: {message}", {name: [message]}
    else:
        detail, fields = f"No API endpoint at {path}; the endpoints are listed at /api/docs/.", {}
    return error_json("not_found", detail, fields, status=status.HTTP_404_NOT_FOUND)


def page_not_found(request, exception=None):
    """handler404: the API's shape under /api/, the site's page elsewhere."""
    if request.path_info.startswith("/api/"):
        return api_not_found(request)
    from django.views.defaults import page_not_found as site_page_not_found

    return site_page_not_found(request, exception)
