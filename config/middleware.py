"""Response headers every page carries."""

from django.conf import settings
from django.http import JsonResponse


class ContentSecurityPolicyMiddleware:
    """Sets the Content-Security-Policy header, so a body that slips escaping still cannot run script."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response


class RefuseNulBytesMiddleware:
    """A NUL byte in the path or the query string is refused with a 400 before any view runs.

    PostgreSQL cannot store or even compare text holding NUL, so a lookup on
    such an id would fail in the database (a 500) instead of answering "no such row".
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        where = None
        if "\x00" in request.path:
            where = "path"
        elif any("\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists()):
            where = "query"
        if where is not None:
            message = f"The {where} contains a NUL byte; ids and parameters are text without control characters."
            return JsonResponse({"error": "invalid", "detail": message, "fields": {where: [message]}}, status=400)
        return self.get_response(request)
