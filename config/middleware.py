"""Response headers every page carries."""

from django.conf import settings


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
