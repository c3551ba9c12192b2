"""A link's numbers per UTC day by its clicks' country and UTM fields (DailyBreakdowns), and a workspace's
(WorkspaceBreakdowns), filled from the daily totals:
every click before this release has no country and no UTM fields stored, so each dimension's rows are the day's
totals under the value '' (purged clicks included, which only the totals still count). The watermark rows are
locked meanwhile, so no roll-up adds to the totals in between."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0012_click_place_and_utm"),
        ("rollups", "0008_test_mode"),
        ("workspaces", "0007_workspace_retention"),
    ]

    operations = [
        migrations.CreateModel(
            name="DailyBreakdowns",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("currency", models.CharField(blank=True, max_length=3)),
                ("clicks", models.BigIntegerField(db_default=0, default=0)),
                ("leads", models.BigIntegerField(db_default=0, default=0)),
                ("sales", models.BigIntegerField(db_default=0, default=0)),
                ("revenue_cents", models.BigIntegerField(db_default=0, default=0)),
                ("refunded_cents", models.BigIntegerField(db_default=0, default=0)),
                ("day", models.DateField()),
                ("dimension", models.CharField(max_length=12)),
                ("value", models.CharField(blank=True, max_length=200)),
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
                "verbose_name_plural": "daily breakdowns",
                "indexes": [
                    models.Index(fields=["workspace", "dimension", "day"], name="rollups_dailybreakdowns_range")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("link", "day", "dimension", "value", "currency"),
                        name="rollups_dailybreakdowns_one_per_value",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="WorkspaceBreakdowns",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("dimension", models.CharField(max_length=12)),
                ("value", models.CharField(blank=True, max_length=200)),
                ("currency", models.CharField(blank=True, max_length=3)),
                ("clicks", models.BigIntegerField(db_default=0, default=0)),
                ("leads", models.BigIntegerField(db_default=0, default=0)),
                ("sales", models.BigIntegerField(db_default=0, default=0)),
                ("revenue_cents", models.BigIntegerField(db_default=0, default=0)),
                ("refunded_cents", models.BigIntegerField(db_default=0, default=0)),
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
                "verbose_name_plural": "workspace breakdowns",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("workspace", "dimension", "day", "value", "currency"),
                        name="rollups_workspacebreakdowns_one_per_value",
                    )
                ],
            },
        ),
        migrations.RunSQL(
            [
                "SELECT 1 FROM rollups_watermark"
                " WHERE source IN ('clicks_click', 'conversions_conversionevent', 'conversions_refund') FOR UPDATE",
                "INSERT INTO rollups_dailybreakdowns (workspace_id, link_id, day, dimension, value, currency,"
                " clicks, leads, sales, revenue_cents, refunded_cents)"
                " SELECT t.workspace_id, t.link_id, t.day, d.dimension, '', t.currency,"
                " t.clicks, t.leads, t.sales, t.revenue_cents, t.refunded_cents"
                " FROM rollups_dailytotals t CROSS JOIN"
                " (VALUES ('country'), ('utm_source'), ('utm_medium'), ('utm_campaign')) AS d(dimension)",
                "INSERT INTO rollups_workspacebreakdowns (workspace_id, day, dimension, value, currency,"
                " clicks, leads, sales, revenue_cents, refunded_cents)"
                " SELECT workspace_id, day, dimension, value, currency,"
                " SUM(clicks), SUM(leads), SUM(sales), SUM(revenue_cents), SUM(refunded_cents)"
                " FROM rollups_dailybreakdowns GROUP BY 1, 2, 3, 4, 5",
            ],
            migrations.RunSQL.noop,
        ),
    ]
