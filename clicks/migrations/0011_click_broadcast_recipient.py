"""Clicks: the BroadcastRecipient a broadcast's click came from (docs/email.md, "Broadcasts").

As 0007: a nullable column without a default is a catalogue change only; its partial index is built CONCURRENTLY,
as clicks take writes all the time, and holds only broadcast clicks.
"""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("clicks", "0010_click_workspace_tail_index"),
        ("workspaces", "0007_workspace_retention"),
    ]

    operations = [
        migrations.AddField(
            model_name="click",
            name="broadcast_recipient_id",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        AddIndexConcurrently(
            model_name="click",
            index=models.Index(
                condition=models.Q(("broadcast_recipient_id__isnull", False)),
                fields=["broadcast_recipient_id"],
                name="clicks_click_bc_recipient",
            ),
        ),
    ]
