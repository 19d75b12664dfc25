from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_account_audit"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="organisation",
            name="has_threads",
        ),
    ]
