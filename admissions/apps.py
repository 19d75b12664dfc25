from django.apps import AppConfig
from django.db.models.signals import post_migrate


def ensure_stewards_group(sender, **kwargs) -> None:
    from admissions.services import stewards_group_ensure

    stewards_group_ensure()


class AdmissionsConfig(AppConfig):
    name = "admissions"
    verbose_name = "Admissions"

    def ready(self) -> None:
        from admissions import signals  # noqa: F401 - connects the receivers
        from admissions.system_recall import SECTION_NAME, system_recall_section
        from memories.turns.sections import register_render_section

        # After auth's own post_migrate handler has created this app's permissions.
        post_migrate.connect(ensure_stewards_group, sender=self, dispatch_uid="admissions_stewards_group")
        # System recall joins the rendered block as a section of its own; memories never imports admissions.
        register_render_section(system_recall_section, name=SECTION_NAME)
