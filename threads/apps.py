from django.apps import AppConfig


class ThreadsConfig(AppConfig):
    name = "threads"
    verbose_name = "Threads and what was learned from them"

    def ready(self) -> None:
        # Erasure of a subject reaches the thread events and learned memories derived from it.
        from memories.signals import subject_erased, subject_exporting
        from threads import services

        subject_erased.connect(services.on_subject_erased, dispatch_uid="threads.erase_derived")
        # The subject-access export holds what erasure reaches: the same events.
        subject_exporting.connect(services.on_subject_exporting, dispatch_uid="threads.export_derived")

        # A person's own fact gets the key consolidation computes, when it is written (issue 16).
        from django.db.models.signals import post_save

        from memories.models import Memory
        from threads import conflicts

        post_save.connect(conflicts.on_memory_saved, sender=Memory, dispatch_uid="threads.user_fact_key")
