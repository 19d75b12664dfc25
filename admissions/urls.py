"""API routes for system claims, appended to `api_v1` by config/urls.py."""

from django.urls import path

from admissions.api import SystemClaimDetailApi, SystemClaimListApi

urlpatterns = [
    path("system-claims", SystemClaimListApi.as_view(), name="system-claims"),
    path("system-claims/<uuid:claim_id>", SystemClaimDetailApi.as_view(), name="system-claim"),
]
