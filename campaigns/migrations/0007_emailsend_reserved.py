"""Per-message send state: a `reserved` status (not yet handed to SMTP) and the worker holding it.

The partial index is built CONCURRENTLY: the sends table takes writes all the time.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("campaigns", "0006_campaign_posts")]

    operations = [
        migrations.AddField(
            model_name="emailsend",
            name="reserved_by",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="emailsend",
            name="status",
            field=models.CharField(
                choices=[("reserved", "Reserved"), ("sent", "Sent"), ("failed", "Failed")], max_length=10
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="emailsend",
                    index=models.Index(
                        condition=models.Q(("status", "reserved")),
                        fields=["reserved_by"],
                        name="campaigns_emailsend_reserved",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS campaigns_emailsend_reserved"
                    " ON campaigns_emailsend (reserved_by) WHERE status = 'reserved'",
                    "DROP INDEX CONCURRENTLY IF EXISTS campaigns_emailsend_reserved",
                ),
            ],
        ),
    ]
