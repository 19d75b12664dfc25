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

        # A person's own fact gets the key consolidation computes, when the write service writes it (issue 16).
        from memories.signals import user_facts_remembered
        from threads import conflicts

        user_facts_remembered.connect(conflicts.on_user_facts_remembered, dispatch_uid="threads.user_fact_key")
