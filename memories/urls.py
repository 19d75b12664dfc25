"""API routes of the agent-turn API, appended to `api_v1` by config/urls.py."""

from django.urls import path

from memories import api, directory_api

urlpatterns = [
    path("memories", api.MemoryListApi.as_view(), name="memories"),
    path("memories/batch", api.MemoryBatchApi.as_view(), name="memories-batch"),
    path("memories/<uuid:memory_id>", api.MemoryDetailApi.as_view(), name="memory"),
    path("memories/<uuid:memory_id>/supersede", api.MemorySupersedeApi.as_view(), name="memory-supersede"),
    path("memories/<uuid:memory_id>/pin", api.MemoryPinApi.as_view(), name="memory-pin"),
    path("memories/<uuid:memory_id>/unpin", api.MemoryUnpinApi.as_view(), name="memory-unpin"),
    path("people", directory_api.PersonListApi.as_view(), name="people"),
    path("people/<str:handle>", directory_api.PersonDetailApi.as_view(), name="person"),
    path("places", directory_api.PlaceListApi.as_view(), name="places"),
    path("places/<str:channel>", directory_api.PlaceDetailApi.as_view(), name="place"),
    path("recall", api.RecallApi.as_view(), name="recall"),
    path("render", api.RenderApi.as_view(), name="render"),
    path("injections/<str:turn_id>", api.InjectionDetailApi.as_view(), name="injection"),
    path("injections/<str:turn_id>/replay", api.InjectionReplayApi.as_view(), name="injection-replay"),
    path(
        "subjects/<str:subject_type>/<str:subject_id>/memories",
        api.SubjectMemoriesApi.as_view(),
        name="subject-memories",
    ),
    path("subjects/<str:subject_type>/<str:subject_id>/erase", api.SubjectEraseApi.as_view(), name="subject-erase"),
]
