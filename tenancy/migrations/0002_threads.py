"""Row-level security on the threads app's tables: events hold what people said, in their words."""

from django.db import migrations

from tenancy import sql

TABLES = ("threads_thread", "threads_threadevent", "threads_learning", "threads_learningsource")


class Migration(migrations.Migration):
    dependencies = [
        ("tenancy", "0001_row_level_security"),
        ("threads", "0001_initial"),
    ]

    operations = [migrations.RunSQL(sql.protect(table), sql.unprotect(table)) for table in TABLES]
