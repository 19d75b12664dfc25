"""Creates the Stewards group with its permissions and gives existing stewards admin access."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

# Frozen as they stood when this migration was written: a migration is history,
# and a later permission (admissions.manage_stance, 0003) is created after this
# one runs. `stewards_group_ensure` keeps the group in step after every migrate.
STEWARDS_GROUP = "Stewards"
STEWARD_PERMISSIONS = (
    ("admissions", "view_systemclaim"),
    ("admissions", "decide_claim"),
    ("admissions", "submit_claim"),
    ("admissions", "view_admissionrecord"),
    ("admissions", "view_stance"),
    ("admissions", "add_stance"),
)


def create_stewards_group(apps, schema_editor):
    # Permissions are normally created after every migration has run; the
    # group needs them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    Membership = apps.get_model("accounts", "Membership")
    group, _ = Group.objects.get_or_create(name=STEWARDS_GROUP)
    for app_label, codename in STEWARD_PERMISSIONS:
        group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    for membership in Membership.objects.filter(role="steward").select_related("user"):
        membership.user.groups.add(group)
        if not membership.user.is_staff:
            membership.user.is_staff = True
            membership.user.save(update_fields=["is_staff"])


def remove_stewards_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=STEWARDS_GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("admissions", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_stewards_group, remove_stewards_group)]
