from django.apps import AppConfig


class ThreadsConfig(AppConfig):
    name = "threads"
    verbose_name = "Threads and what was learned from them"

    def ready(self) -> None:
        # Erasure of a subject reaches the thread events and learned memories derived from it.
        from memories.signals import subject_erased
        from threads import services

        subject_erased.connect(services.on_subject_erased, dispatch_uid="threads.erase_derived")
