from django.apps import AppConfig


class WebConfig(AppConfig):
    """The account holders' pages: see, search, correct, pin, forget and export what is kept about you."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "web"
    verbose_name = "Pages for account holders"
