from django.apps import AppConfig


class AdmissionsConfig(AppConfig):
    name = "admissions"
    verbose_name = "Admissions"

    def ready(self) -> None:
        from admissions import signals  # noqa: F401 - connects the receivers
