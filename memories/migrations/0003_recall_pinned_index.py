from django.db import migrations

from memories import turn_sql


class Migration(migrations.Migration):
    dependencies = [("memories", "0002_turn_api")]

    operations = [migrations.RunSQL(turn_sql.PINNED_INDEX, turn_sql.DROP_PINNED_INDEX)]
