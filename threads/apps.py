from django.apps import AppConfig


class ThreadsConfig(AppConfig):
    name = "threads"
    verbose_name = "Threads and what was learned from them"

    def ready(self) -> None:
        # Erasure of a subject reaches the thread events and learned memories derived from it.
        from memories.signals import subject_erased, subject_exporting
        from threads import erasure

        subject_erased.connect(erasure.on_subject_erased, dispatch_uid="threads.erase_derived")
        # The subject-access export holds what erasure reaches: the same events.
        subject_exporting.connect(erasure.on_subject_exporting, dispatch_uid="threads.export_derived")

        # A person's own fact gets the key consolidation computes, when the write service writes it.
        from memories.signals import user_facts_remembered
        from threads import conflicts

        user_facts_remembered.connect(conflicts.on_user_facts_remembered, dispatch_uid="threads.user_fact_key")

        # Contextual recall walks a thread's episodes in their events' order; memories never imports threads.
        # This process walks a thread it created at once, not when its brief "no thread here" expires.
        from django.db.models.signals import post_save

        from memories.recall.contextual import register_neighbour_walk
        from threads.models import Thread
        from threads.recall import on_thread_saved, thread_neighbour_walk

        register_neighbour_walk(thread_neighbour_walk, name="threads")
        post_save.connect(on_thread_saved, sender=Thread, dispatch_uid="threads.walk_new_thread")
