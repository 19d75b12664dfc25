from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from admissions import urls as admissions_urls
from config.api_docs import ApiDocsView
from config.health import healthz
from config.observability.endpoint import metrics
from config.schema import BearerTokenScheme, MemberSessionScheme
from lib.api.not_found import api_not_found
from memories import urls as memories_urls
from threads import urls as threads_urls

# The admin is Archivist's console for stewards and operators.
admin.site.site_header = "Archivist"
admin.site.site_title = "Archivist"
admin.site.index_title = "Stewards' and operators' console"
# Rows here are kept for their audit (protected foreign keys, append-only
# triggers), so Django's bulk "Delete selected" would fail on them; no screen offers it.
admin.site.disable_action("delete_selected")

# Each app adds its API routes to `api_v1` through its own urls module.
api_v1 = []
api_v1 += admissions_urls.urlpatterns
api_v1 += memories_urls.urlpatterns
api_v1 += threads_urls.urlpatterns

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", ApiDocsView.as_view(url_name="schema"), name="api-docs"),
    path("api/v1/", include((api_v1, "api"), namespace="v1")),
    # Any other /api/ path (an unknown endpoint, a malformed id) answers the JSON error shape, even with DEBUG on.
    re_path(r"^api/", api_not_found),
]
# The account holders' pages: /accounts/ (log in, log out, password) and /me/.
urlpatterns += [path("", include("web.urls"))]

handler404 = "lib.api.not_found.page_not_found"
handler500 = "lib.api.error_pages.server_error"

# Imported for their side effect: drf-spectacular registers extensions on import.
OPENAPI_AUTH_SCHEMES = (BearerTokenScheme, MemberSessionScheme)
