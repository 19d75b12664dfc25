"""The real routes plus probes a test needs: views that forget their tenant filter on purpose."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import JsonResponse
from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from config.urls import urlpatterns as real_urlpatterns
from memories.models import Channel, Memory
from tenancy.context import active_tenant
from tenancy.roles import current_role


def _everything() -> dict:
    """What an unfiltered query returns: no `organisation=` anywhere, on purpose."""
    return {
        "role": current_role(),
        "tenant": active_tenant(),
        "memory_organisations": sorted(
            {str(o) for o in Memory.objects.exclude(bucket="system").values_list("organisation_id", flat=True)}
        ),
        "memories": Memory.objects.count(),
        "channels": Channel.objects.count(),
    }


class UnfilteredApi(APIView):
    def get(self, request):
        return Response(_everything())


class UnfilteredAnonymousApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request):
        return Response(_everything())


@login_required
def unfiltered_page(request):
    return JsonResponse(_everything())


class LosesTheDatabaseApi(APIView):
    """Writes, then loses its connection mid-request (the server ends this backend), then writes again."""

    def post(self, request):
        Channel.objects.create(
            organisation=request.principal.organisation, external_id="C-before-the-fault", kind="public"
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        Channel.objects.create(
            organisation=request.principal.organisation, external_id="C-after-the-fault", kind="public"
        )
        return Response(status=201)


urlpatterns = [
    path("probe/unfiltered", UnfilteredApi.as_view()),
    path("probe/unfiltered-anonymous", UnfilteredAnonymousApi.as_view()),
    path("probe/unfiltered-page", unfiltered_page),
    path("probe/loses-the-database", LosesTheDatabaseApi.as_view()),
    *real_urlpatterns,
]
