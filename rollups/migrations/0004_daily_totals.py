"""Link totals per currency, and per UTC day too (DailyTotals); 0005 fills them.

The link totals were one row per link with one revenue figure; now a link has a row per currency ('' for
its clicks and leads), so no figure ever adds two currencies, and the same numbers per day answer any
range of days.
"""

import django.db.models.deletion
from django.db import migrations, models


def numbers() -> list[tuple]:
    return [
        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
        ("currency", models.CharField(blank=True, max_length=3)),
        ("clicks", models.BigIntegerField(db_default=0, default=0)),
        ("leads", models.BigIntegerField(db_default=0, default=0)),
        ("sales", models.BigIntegerField(db_default=0, default=0)),
        ("revenue_cents", models.BigIntegerField(db_default=0, default=0)),
        ("refunded_cents", models.BigIntegerField(db_default=0, default=0)),
        (
            "link",
            models.ForeignKey(
                db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="clicks.link"
            ),
        ),
        (
            "workspace",
            models.ForeignKey(
                db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="workspaces.workspace"
            ),
        ),
    ]


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0006_click_enrichment"),
        ("conversions", "0005_currency_test_mode"),
        ("rollups", "0003_campaign_number_triggers"),
        ("workspaces", "0003_token_scopes"),
    ]

    operations = [
        migrations.DeleteModel(name="LinkTotals"),
        migrations.CreateModel(
            name="LinkTotals",
            fields=numbers(),
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("link", "currency"), name="rollups_linktotals_one_per_currency")
                ],
            },
        ),
        migrations.CreateModel(
            name="DailyTotals",
            fields=[*numbers(), ("day", models.DateField())],
            options={
                "verbose_name_plural": "daily totals",
                "indexes": [models.Index(fields=["workspace", "day"], name="rollups_dailytotals_range")],
                "constraints": [
                    models.UniqueConstraint(fields=("link", "day", "currency"), name="rollups_dailytotals_one_per_day")
                ],
            },
        ),
    ]
