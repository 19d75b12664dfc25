"""Django's own error answers (a server error, a refused CSRF check): the API's JSON shape under /api/, the
site's page elsewhere. Missing pages are `lib.api.not_found`."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from lib.api.errors import error_json


def _under_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: nothing about the failure is shown; the server's log has the traceback."""
    if _under_api(request):
        detail = "Something went wrong on the server; nothing you sent is at fault. Try again, or tell its operator."
        return error_json("server_error", detail, status=500)
    from django.views.defaults import server_error as site_server_error

    return site_server_error(request)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: an API call without a Bearer token is checked as a signed-in page's form would be."""
    if _under_api(request):
        detail = (
            "A call without a Bearer token is taken as a signed-in browser's, and it lacked the CSRF token; "
            "send `Authorization: Bearer <token>` (an agent's token)."
        )
        fields = {"Authorization": ["Send an agent's token as `Bearer <token>`."]}
        return error_json("forbidden", detail, fields, status=403)
    from django.views.csrf import csrf_failure as site_csrf_failure

    return site_csrf_failure(request, reason)
