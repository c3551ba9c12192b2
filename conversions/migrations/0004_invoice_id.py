"""A sale's invoice id, unique per workspace where given. The column has a constant default (no rewrite)
and the unique index is built CONCURRENTLY, so a live events table keeps taking conversions."""

from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("conversions", "0003_event_tail_index"), ("workspaces", "0003_token_scopes")]

    operations = [
        migrations.AddField(
            model_name="conversionevent",
            name="invoice_id",
            field=models.CharField(blank=True, db_default="", default="", max_length=255),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="conversionevent",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("invoice_id", ""), _negated=True),
                        fields=("workspace", "invoice_id"),
                        name="conversions_event_one_per_invoice",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS conversions_event_one_per_invoice"
                    " ON conversions_conversionevent (workspace_id, invoice_id) WHERE invoice_id <> ''",
                    "DROP INDEX CONCURRENTLY IF EXISTS conversions_event_one_per_invoice",
                ),
            ],
        ),
    ]
