"""Every amount at most MONEY_MAX (2**53 - 1) minor units: a CHECK on a sale's value and on a refund's amount.

Added NOT VALID, then validated only where no stored row is over the bound: a database that took larger amounts
before (the API allowed up to 2**63 - 1) migrates all the same, with new rows checked and its old rows kept as
they are, and one log line saying how many there are (docs/api.md, "Money bounds", says how to validate later).
Not atomic: each step commits, so the ADD's brief exclusive lock is gone before VALIDATE scans the table under a
lock that lets inserts through.
"""

import logging

from django.db import migrations, models

MONEY_MAX = 2**53 - 1  # lftrack.currencies.MONEY_MAX when written; a migration keeps its own copy
CHECKS = [  # (table, column, constraint)
    ("conversions_conversionevent", "value_cents", "conversions_event_value_bounded"),
    ("conversions_refund", "amount_cents", "conversions_refund_amount_bounded"),
]


def validate_where_clean(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cursor:
        for table, column, name in CHECKS:
            cursor.execute(f"SELECT COUNT(*) FROM {table} WHERE {column} > %s", [MONEY_MAX])
            over = cursor.fetchone()[0]
            if over:
                logging.getLogger("lftrack.migrations").warning(
                    "constraint left NOT VALID: stored amounts over the bound",
                    extra={"table": table, "constraint": name, "rows": over},
                )
            else:
                cursor.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("conversions", "0007_unique_ids_per_mode")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="conversionevent",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("value_cents__lte", MONEY_MAX)), name="conversions_event_value_bounded"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="refund",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("amount_cents__lte", MONEY_MAX)), name="conversions_refund_amount_bounded"
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({column} <= {MONEY_MAX}) NOT VALID",
                    f"ALTER TABLE {table} DROP CONSTRAINT {name}",
                )
                for table, column, name in CHECKS
            ],
        ),
        migrations.RunPython(validate_where_clean, migrations.RunPython.noop),
    ]
