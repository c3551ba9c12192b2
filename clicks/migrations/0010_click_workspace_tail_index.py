"""Clicks: a (workspace, id) index for retention's purge (rollups/retention.py), in place of the workspace_id index.

The purge takes a workspace's oldest clicks in id order, a bounded batch at a time, without reading past
another workspace's rows; the new index also serves every lookup the old one did. One for one, so a click
still updates three indexes. Built CONCURRENTLY (inserts keep going while it builds).
"""

import django.db.models.deletion
from django.db import migrations, models

from lftrack.schema import index_swap

TABLE = "clicks_click"
NEW, COLUMNS = "clicks_click_workspace_tail", "workspace_id, id"  # the index this migration builds
OLD, OLD_COLUMNS = "clicks_click_workspace_id_0844b853", "workspace_id"  # the one it replaces


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("clicks", "0009_link_recent_index")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="click",
                    name="workspace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="workspaces.workspace",
                    ),
                ),
                migrations.AddIndex(
                    model_name="click",
                    index=models.Index(fields=["workspace", "id"], name="clicks_click_workspace_tail"),
                ),
            ],
            database_operations=[index_swap(TABLE, build=(NEW, COLUMNS), drop=(OLD, OLD_COLUMNS))],
        ),
    ]
