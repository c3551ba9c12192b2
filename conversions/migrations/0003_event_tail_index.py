"""Conversion events: a (link, id) index for the admin numbers' live tail, in place of (link, event).

Swaps one index for another on a table that takes writes all the time: built CONCURRENTLY
(inserts keep going while it builds, seconds on millions of rows).
"""

from django.db import migrations, models

from lftrack.schema import index_swap

TABLE = "conversions_conversionevent"
NEW, COLUMNS = "conversions_event_link_tail", "link_id, id"  # the index this migration builds
OLD, OLD_COLUMNS = "conversions_event_link", "link_id, event"  # the one it replaces


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("conversions", "0002_drop_redundant_indexes")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="conversionevent", name="conversions_event_link"),
                migrations.AddIndex(
                    model_name="conversionevent",
                    index=models.Index(fields=["link", "id"], name="conversions_event_link_tail"),
                ),
            ],
            database_operations=[index_swap(TABLE, build=(NEW, COLUMNS), drop=(OLD, OLD_COLUMNS))],
        ),
    ]
