"""Totals per link and per campaign, and the watermarks of the tables rolled up into them."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("campaigns", "0005_lead_tail_index"),
        ("clicks", "0003_click_tail_index"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="Watermark",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("source", models.CharField(max_length=63, unique=True)),
                ("last_id", models.BigIntegerField(default=0)),
                ("rolled_up_at", models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.CreateModel(
            name="CampaignTotals",
            fields=[
                (
                    "campaign",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="totals",
                        serialize=False,
                        to="campaigns.campaign",
                    ),
                ),
                ("leads", models.BigIntegerField(default=0)),
                (
                    "workspace",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="workspaces.workspace"
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="LinkTotals",
            fields=[
                (
                    "link",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="totals",
                        serialize=False,
                        to="clicks.link",
                    ),
                ),
                ("clicks", models.BigIntegerField(default=0)),
                ("leads", models.BigIntegerField(default=0)),
                ("sales", models.BigIntegerField(default=0)),
                ("revenue_cents", models.BigIntegerField(default=0)),
                (
                    "workspace",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="workspaces.workspace"
                    ),
                ),
            ],
        ),
    ]
