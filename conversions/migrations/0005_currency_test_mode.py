"""Each event's currency (rows before it: USD, the only currency there was) and its test-mode flag. Both
columns have a constant default (no rewrite); the currency check is added NOT VALID and validated in its
own transaction, so a live events table keeps taking conversions while existing rows are checked."""

from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # each step commits: VALIDATE must not run under the ADD's exclusive lock

    dependencies = [("conversions", "0004_invoice_id")]

    operations = [
        migrations.AddField(
            model_name="conversionevent",
            name="currency",
            field=models.CharField(db_default="USD", default="USD", max_length=3),
        ),
        migrations.AddField(
            model_name="conversionevent",
            name="is_test",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="conversionevent",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("currency__regex", "^[A-Z]{3}$")), name="conversions_event_currency_code"
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE conversions_conversionevent ADD CONSTRAINT conversions_event_currency_code"
                    " CHECK (currency::text ~ '^[A-Z]{3}$') NOT VALID",
                    "ALTER TABLE conversions_conversionevent DROP CONSTRAINT conversions_event_currency_code",
                ),
                migrations.RunSQL(
                    "ALTER TABLE conversions_conversionevent VALIDATE CONSTRAINT conversions_event_currency_code",
                    migrations.RunSQL.noop,
                ),
            ],
        ),
    ]
