"""Thread routes, appended to `api_v1` by config/urls.py."""

from django.urls import path

from threads import api

urlpatterns = [
    path("threads/<str:thread_id>/events", api.ThreadEventsApi.as_view(), name="thread-events"),
    path("threads/<str:thread_id>", api.ThreadDetailApi.as_view(), name="thread"),
]
