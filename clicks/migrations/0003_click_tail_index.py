"""Clicks: a (link, id) index for the admin numbers' live tail, in place of the link_id index.

Swaps one index for another on a table that takes writes all the time: built CONCURRENTLY
(inserts keep going while it builds, seconds on millions of rows).
"""

import django.db.models.deletion
from django.db import migrations, models

from lftrack.schema import index_swap

TABLE = "clicks_click"
NEW, COLUMNS = "clicks_click_link_tail", "link_id, id"  # the index this migration builds
OLD, OLD_COLUMNS = "clicks_click_link_id_3c061c58", "link_id"  # the one it replaces


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("clicks", "0002_drop_redundant_indexes")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="click",
                    name="link",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="clicks",
                        to="clicks.link",
                    ),
                ),
                migrations.AddIndex(
                    model_name="click",
                    index=models.Index(fields=["link", "id"], name="clicks_click_link_tail"),
                ),
            ],
            database_operations=[index_swap(TABLE, build=(NEW, COLUMNS), drop=(OLD, OLD_COLUMNS))],
        ),
    ]
