"""Each contact's lifetime leads, sales and revenue per currency (CustomerTotals), kept by triggers in the statement
that writes a conversion or a refund. Only inserts count: a row purged by retention stays counted, as in the roll-ups,
and erasure deletes the contact's totals itself (conversions/erasure.py).

Creating the triggers holds conversion and refund writers off for an instant only; the rows written before them are
counted by the next migration, in short batches (0012_fill_customer_totals).
"""

import django.db.models.deletion
import django.db.models.expressions
from django.db import migrations, models

BIGINT_MAX = "9223372036854775807"
TOTALS = "conversions_customertotals"

TRIGGERS = f"""
CREATE FUNCTION conversions_customer_totals_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The row of counts first, then the currency's: every writer locks a contact's rows in this order.
    INSERT INTO {TOTALS} AS t (workspace_id, customer_id, currency, leads, sales)
    VALUES (NEW.workspace_id, NEW.customer_id, '', (NEW.event = 'lead')::int, (NEW.event = 'sale')::int)
    ON CONFLICT (customer_id, currency) DO UPDATE SET leads = t.leads + excluded.leads, sales = t.sales + excluded.sales;
    IF NEW.event = 'sale' THEN
        INSERT INTO {TOTALS} AS t (workspace_id, customer_id, currency, sales, revenue_cents)
        VALUES (NEW.workspace_id, NEW.customer_id, NEW.currency, 1, COALESCE(NEW.value_cents, 0))
        ON CONFLICT (customer_id, currency) DO UPDATE SET sales = t.sales + 1,
            revenue_cents = LEAST(t.revenue_cents::numeric + excluded.revenue_cents, {BIGINT_MAX})::bigint;
    END IF;
    RETURN NULL;
END $$;
-- AFTER: the customer_id as stored, NULL for a contact erased meanwhile (conversions/0010's BEFORE trigger).
CREATE TRIGGER conversions_customer_totals_add AFTER INSERT ON conversions_conversionevent
    FOR EACH ROW WHEN (NEW.customer_id IS NOT NULL) EXECUTE FUNCTION conversions_customer_totals_add();

CREATE FUNCTION conversions_customer_totals_refund() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- An UPDATE only: the sale made the row (or, for a sale older than these triggers, the fill of 0012 makes it and
    -- counts this refund). A sale of nobody (erased, or sent without a customer) has none.
    UPDATE {TOTALS} SET refunded_cents = LEAST(refunded_cents::numeric + NEW.amount_cents, {BIGINT_MAX})::bigint
    WHERE customer_id = (SELECT customer_id FROM conversions_conversionevent WHERE id = NEW.conversion_id)
      AND currency = NEW.currency;
    RETURN NULL;
END $$;
CREATE TRIGGER conversions_customer_totals_refund AFTER INSERT ON conversions_refund
    FOR EACH ROW EXECUTE FUNCTION conversions_customer_totals_refund();
"""


UNDO = """
DROP TRIGGER IF EXISTS conversions_customer_totals_refund ON conversions_refund;
DROP FUNCTION IF EXISTS conversions_customer_totals_refund();
DROP TRIGGER IF EXISTS conversions_customer_totals_add ON conversions_conversionevent;
DROP FUNCTION IF EXISTS conversions_customer_totals_add();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("conversions", "0010_conversion_of_erased"),
        ("customers", "0007_customer_erasure"),
        ("workspaces", "0007_workspace_retention"),
    ]

    operations = [
        migrations.CreateModel(
            name="CustomerTotals",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("currency", models.CharField(blank=True, max_length=3)),
                ("leads", models.BigIntegerField(db_default=0)),
                ("sales", models.BigIntegerField(db_default=0)),
                ("revenue_cents", models.BigIntegerField(db_default=0)),
                ("refunded_cents", models.BigIntegerField(db_default=0)),
                (
                    "net_cents",
                    models.GeneratedField(
                        db_persist=True,
                        expression=django.db.models.expressions.CombinedExpression(
                            models.F("revenue_cents"), "-", models.F("refunded_cents")
                        ),
                        output_field=models.BigIntegerField(),
                    ),
                ),
                (
                    "customer",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="totals",
                        to="customers.customer",
                    ),
                ),
                (
                    "workspace",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="workspaces.workspace",
                    ),
                ),
            ],
            options={
                "verbose_name": "contact totals",
                "verbose_name_plural": "contact totals",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("customer", "currency"), name="conversions_customertotals_one_per_currency"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("currency", ""), ("currency__regex", "^[A-Z]{3}$"), _connector="OR"),
                        name="conversions_customertotals_currency",
                    ),
                ],
            },
        ),
        migrations.RunSQL(TRIGGERS, UNDO),
    ]
