"""The browsable API docs, served with the strict Content-Security-Policy intact for scripts.

The split Swagger view loads its start-up script from a URL instead of inline,
so `script-src 'self'` holds. Swagger UI's stylesheet is a file too, but its
page carries a small inline `<style>` and the UI sets inline styles as it
renders; only this page relaxes `style-src` for that. The UI itself is served
from this app's static files (drf-spectacular-sidecar), never from a CDN.
"""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularSwaggerSplitView


def _docs_policy() -> str:
    parts = []
    for part in settings.CONTENT_SECURITY_POLICY.split(";"):
        directive = part.strip()
        if directive.startswith("style-src"):
            directive = "style-src 'self' 'unsafe-inline'"
        if directive:
            parts.append(directive)
    return "; ".join(parts)


class ApiDocsView(SpectacularSwaggerSplitView):
    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        if request.GET.get("script") is None:
            response["Content-Security-Policy"] = _docs_policy()
        return response
