"""The account audit: who changed whom (sign-in, roles, directory records) and an organisation's switches."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# Row-level security for the account audit, frozen as text (what tenancy.sql.protect produced).
PROTECT = """
ALTER TABLE accounts_accountaudit ENABLE ROW LEVEL SECURITY;
ALTER TABLE accounts_accountaudit FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS archivist_tenant ON accounts_accountaudit;
CREATE POLICY archivist_tenant ON accounts_accountaudit TO archivist_app USING (organisation_id = archivist_tenant()) WITH CHECK (organisation_id = archivist_tenant());
DROP POLICY IF EXISTS archivist_operator ON accounts_accountaudit;
CREATE POLICY archivist_operator ON accounts_accountaudit TO archivist_app USING (archivist_cross_tenant() = 'operator') WITH CHECK (archivist_cross_tenant() = 'operator');
DROP POLICY IF EXISTS archivist_maintenance ON accounts_accountaudit;
CREATE POLICY archivist_maintenance ON accounts_accountaudit TO archivist_maintenance USING (true) WITH CHECK (true);
"""
UNPROTECT = """
DROP POLICY IF EXISTS archivist_tenant ON accounts_accountaudit;
DROP POLICY IF EXISTS archivist_operator ON accounts_accountaudit;
DROP POLICY IF EXISTS archivist_maintenance ON accounts_accountaudit;
ALTER TABLE accounts_accountaudit NO FORCE ROW LEVEL SECURITY;
ALTER TABLE accounts_accountaudit DISABLE ROW LEVEL SECURITY;
"""

ACTIONS = ["create", "rename", "invite", "remove", "restore", "role", "switch"]


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_organisation_has_threads"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("tenancy", "0002_threads"),
    ]

    operations = [
        migrations.CreateModel(
            name="AccountAudit",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                (
                    "action",
                    models.CharField(
                        choices=[
                            ("create", "Added to the directory"),
                            ("rename", "Renamed in the directory"),
                            ("invite", "Invited to sign in"),
                            ("remove", "Removed: cannot sign in"),
                            ("restore", "Restored: signs in again"),
                            ("role", "Role changed"),
                            ("switch", "Organisation switch changed"),
                        ],
                        max_length=16,
                    ),
                ),
                ("detail", models.JSONField(blank=True, default=dict)),
                ("at", models.DateTimeField(auto_now_add=True)),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "agent",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="accounts.agent",
                    ),
                ),
                (
                    "organisation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="accounts.organisation"
                    ),
                ),
                (
                    "person",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["at", "id"],
                "indexes": [models.Index(fields=["organisation", "person", "at"], name="accounts_audit_person_idx")],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("action__in", ACTIONS)), name="accounts_audit_action_valid"
                    )
                ],
            },
        ),
        migrations.RunSQL(PROTECT, UNPROTECT),
    ]
