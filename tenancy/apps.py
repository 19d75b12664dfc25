from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "tenancy"
    verbose_name = "Tenant isolation in the database"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from tenancy.roles import switch_role_on_connect

        connection_created.connect(switch_role_on_connect, dispatch_uid="tenancy_switch_role_on_connect")
