"""The body rule refuses C1 controls (U+0080-U+009F) as well as C0 ones.

The SQL is written here as text, so what a fresh database gets never depends
on a live module. NOT VALID: rows stored before keep their text (render shows
any such character as a visible mark); every new or changed row is checked.
"""

from django.db import migrations

C0_ONLY = r"[\x01-\x08\x0b-\x1f\x7f]"
C0_AND_C1 = r"[\x01-\x08\x0b-\x1f\x7f-\x9f]"


def body_rule(controls: str, *, not_valid: bool) -> str:
    return (
        "ALTER TABLE memories_memory DROP CONSTRAINT IF EXISTS memories_body_text;\n"
        "ALTER TABLE memories_memory ADD CONSTRAINT memories_body_text CHECK ("
        "length(body) <= 2000 AND NOT (body ~ '^\\s|\\s$') AND (body ~ '"
        + controls
        + "') = false)"
        + (" NOT VALID" if not_valid else "")
        + ";"
    )


class Migration(migrations.Migration):
    dependencies = [("memories", "0004_place_audit")]

    operations = [
        migrations.RunSQL(body_rule(C0_AND_C1, not_valid=True), body_rule(C0_ONLY, not_valid=False)),
    ]
