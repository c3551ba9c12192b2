"""Refunds of sales: append-only, each with its sale's link, currency, test flag and time."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0006_click_enrichment"),
        ("conversions", "0005_currency_test_mode"),
        ("workspaces", "0003_token_scopes"),
    ]

    operations = [
        migrations.CreateModel(
            name="Refund",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("amount_cents", models.BigIntegerField()),
                ("currency", models.CharField(max_length=3)),
                ("sale_occurred_at", models.DateTimeField()),
                ("reason", models.CharField(blank=True, default="", max_length=500)),
                ("refund_id", models.CharField(blank=True, default="", max_length=255)),
                ("is_test", models.BooleanField(default=False)),
                ("created_at", models.DateTimeField()),
                (
                    "conversion",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="refunds",
                        to="conversions.conversionevent",
                    ),
                ),
                (
                    "link",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="clicks.link"
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
                "indexes": [
                    models.Index(fields=["conversion", "id"], name="conversions_refund_sale"),
                    models.Index(fields=["link", "id"], name="conversions_refund_link_tail"),
                    models.Index(fields=["workspace", "-created_at"], name="conversions_refund_recent"),
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("amount_cents__gt", 0)), name="conversions_refund_amount_positive"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("currency__regex", "^[A-Z]{3}$")), name="conversions_refund_currency_code"
                    ),
                    models.UniqueConstraint(
                        condition=models.Q(("refund_id", ""), _negated=True),
                        fields=("workspace", "refund_id"),
                        name="conversions_refund_one_per_refund_id",
                    ),
                ],
            },
        ),
    ]
