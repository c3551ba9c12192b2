"""People's clicks per link, UTC day, and device, browser or referrer domain (DailyClickKinds), filled with the
clicks up to the watermark of clicks_click (its row locked meanwhile, so no roll-up runs in between)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0006_click_enrichment"),
        ("rollups", "0005_fill_daily_totals"),
        ("workspaces", "0003_token_scopes"),
    ]

    operations = [
        migrations.CreateModel(
            name="DailyClickKinds",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                (
                    "kind",
                    models.CharField(
                        choices=[("device", "Device"), ("browser", "Browser"), ("referrer", "Referrer")], max_length=10
                    ),
                ),
                ("value", models.CharField(blank=True, max_length=255)),
                ("clicks", models.BigIntegerField(default=0)),
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
                "verbose_name_plural": "daily click kinds",
                "indexes": [models.Index(fields=["workspace", "day"], name="rollups_dailyclickkinds_range")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("link", "day", "kind", "value"), name="rollups_dailyclickkinds_one_per_value"
                    )
                ],
            },
        ),
        migrations.RunSQL(
            [
                "SELECT 1 FROM rollups_watermark WHERE source = 'clicks_click' FOR UPDATE",
                "INSERT INTO rollups_dailyclickkinds (workspace_id, link_id, day, kind, value, clicks)"
                " SELECT MIN(x.workspace_id), x.link_id, (x.created_at AT TIME ZONE 'UTC')::date, k.kind, k.value, COUNT(*)"
                " FROM clicks_click x CROSS JOIN LATERAL (VALUES ('device', x.device), ('browser', x.browser),"
                " ('referrer', x.referrer_domain)) AS k(kind, value)"
                " WHERE x.id <= (SELECT COALESCE(MAX(last_id), 0) FROM rollups_watermark WHERE source = 'clicks_click')"
                " AND NOT x.is_bot GROUP BY 2, 3, 4, 5",
            ],
            migrations.RunSQL.noop,
        ),
    ]
