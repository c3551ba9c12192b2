"""Contacts of test tokens live in their own identity space: `is_test` (a constant default, no rewrite), and the
email and external_id unique indexes take the mode as a column. Each new index is built CONCURRENTLY before the
old one goes, so the contacts table keeps taking conversions and an address stays unique at every moment."""

import django.db.models.functions.text
from django.db import migrations, models

TABLE = "customers_customer"


def swap(old: str, new: str, columns: str, predicate: str) -> migrations.RunSQL:
    build = f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {{}} ON {TABLE} ({columns}{{}}) WHERE {predicate}"
    return migrations.RunSQL(
        [build.format(new, ", is_test"), f"DROP INDEX CONCURRENTLY IF EXISTS {old}"],
        [build.format(old, ""), f"DROP INDEX CONCURRENTLY IF EXISTS {new}"],
    )


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("customers", "0005_activity_channel_provider")]

    operations = [
        migrations.AddField(
            model_name="customer",
            name="is_test",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="customer", name="customers_customer_one_per_email"),
                migrations.RemoveConstraint(
                    model_name="customer", name="customers_customer_one_holder_per_external_id"
                ),
                migrations.AddConstraint(
                    model_name="customer",
                    constraint=models.UniqueConstraint(
                        django.db.models.functions.text.Lower("email"),
                        models.F("workspace"),
                        models.F("is_test"),
                        condition=models.Q(("email", ""), _negated=True),
                        name="customers_customer_one_per_email_and_mode",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="customer",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("external_id", ""), _negated=True),
                        fields=("workspace", "external_id", "is_test"),
                        name="customers_customer_one_holder_per_external_id_and_mode",
                    ),
                ),
            ],
            database_operations=[
                swap(
                    "customers_customer_one_per_email",
                    "customers_customer_one_per_email_and_mode",
                    "(lower(email)), workspace_id",
                    "email <> ''",
                ),
                swap(
                    "customers_customer_one_holder_per_external_id",
                    "customers_customer_one_holder_per_external_id_and_mode",
                    "workspace_id, external_id",
                    "external_id <> ''",
                ),
            ],
        ),
    ]
