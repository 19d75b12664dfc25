"""API routes of the memory store, appended to `api_v1` by config/urls.py."""

from django.urls import path

from memories.api import batch, directory, injections, memories, recall, subjects

urlpatterns = [
    path("memories", memories.MemoryListApi.as_view(), name="memories"),
    path("memories/batch", batch.MemoryBatchApi.as_view(), name="memories-batch"),
    path("memories/<uuid:memory_id>", memories.MemoryDetailApi.as_view(), name="memory"),
    path("memories/<uuid:memory_id>/supersede", memories.MemorySupersedeApi.as_view(), name="memory-supersede"),
    path("memories/<uuid:memory_id>/pin", memories.MemoryPinApi.as_view(), name="memory-pin"),
    path("memories/<uuid:memory_id>/unpin", memories.MemoryUnpinApi.as_view(), name="memory-unpin"),
    path("people", directory.PersonListApi.as_view(), name="people"),
    path("people/<str:handle>", directory.PersonDetailApi.as_view(), name="person"),
    path("places", directory.PlaceListApi.as_view(), name="places"),
    path("places/<str:channel>", directory.PlaceDetailApi.as_view(), name="place"),
    path("recall", recall.RecallApi.as_view(), name="recall"),
    path("render", recall.RenderApi.as_view(), name="render"),
    path("injections/<str:turn_id>", injections.InjectionDetailApi.as_view(), name="injection"),
    path("injections/<str:turn_id>/replay", injections.InjectionReplayApi.as_view(), name="injection-replay"),
    path(
        "subjects/<str:subject_type>/<str:subject_id>/memories",
        subjects.SubjectMemoriesApi.as_view(),
        name="subject-memories",
    ),
    path(
        "subjects/<str:subject_type>/<str:subject_id>/erase", subjects.SubjectEraseApi.as_view(), name="subject-erase"
    ),
]
