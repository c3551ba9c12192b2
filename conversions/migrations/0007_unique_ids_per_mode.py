"""A sale's invoice_id and a refund's refund_id are unique per workspace and mode (live or test), so a test sale
never takes the invoice id of the live sale that will bring it. Built CONCURRENTLY before the old index goes:
the events table keeps taking conversions, and an invoice id stays unique at every moment."""

from django.db import migrations, models


def swap(table: str, old: str, new: str, column: str) -> migrations.RunSQL:
    build = f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {{}} ON {table} (workspace_id, {column}{{}}) WHERE {column} <> ''"
    return migrations.RunSQL(
        [build.format(new, ", is_test"), f"DROP INDEX CONCURRENTLY IF EXISTS {old}"],
        [build.format(old, ""), f"DROP INDEX CONCURRENTLY IF EXISTS {new}"],
    )


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("conversions", "0006_refund")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="conversionevent", name="conversions_event_one_per_invoice"),
                migrations.AddConstraint(
                    model_name="conversionevent",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("invoice_id", ""), _negated=True),
                        fields=("workspace", "invoice_id", "is_test"),
                        name="conversions_event_one_per_invoice_and_mode",
                    ),
                ),
                migrations.RemoveConstraint(model_name="refund", name="conversions_refund_one_per_refund_id"),
                migrations.AddConstraint(
                    model_name="refund",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("refund_id", ""), _negated=True),
                        fields=("workspace", "refund_id", "is_test"),
                        name="conversions_refund_one_per_refund_id_and_mode",
                    ),
                ),
            ],
            database_operations=[
                swap(
                    "conversions_conversionevent",
                    "conversions_event_one_per_invoice",
                    "conversions_event_one_per_invoice_and_mode",
                    "invoice_id",
                ),
                swap(
                    "conversions_refund",
                    "conversions_refund_one_per_refund_id",
                    "conversions_refund_one_per_refund_id_and_mode",
                    "refund_id",
                ),
            ],
        ),
    ]
