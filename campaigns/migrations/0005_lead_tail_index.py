"""Campaign leads: a (campaign, id) index for the admin numbers' live tail, in place of the campaign_id index.

Swaps one index for another on a table that takes writes all the time: built CONCURRENTLY
(inserts keep going while it builds, seconds on millions of rows).
"""

import django.db.models.deletion
from django.db import migrations, models

from lftrack.schema import index_swap

TABLE = "campaigns_campaignlead"
NEW, COLUMNS = "campaigns_campaignlead_tail", "campaign_id, id"  # the index this migration builds
OLD, OLD_COLUMNS = "campaigns_campaignlead_campaign_id_0d317bb1", "campaign_id"  # the one it replaces


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("campaigns", "0004_drop_redundant_indexes")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="campaignlead",
                    name="campaign",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="leads",
                        to="campaigns.campaign",
                    ),
                ),
                migrations.AddIndex(
                    model_name="campaignlead",
                    index=models.Index(fields=["campaign", "id"], name="campaigns_campaignlead_tail"),
                ),
            ],
            database_operations=[index_swap(TABLE, build=(NEW, COLUMNS), drop=(OLD, OLD_COLUMNS))],
        ),
    ]
