"""CampaignTotals gains enrollments by state, sends, complaints and unsubscribes; the log of their changes."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0005_lead_tail_index"),
        ("rollups", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaigntotals",
            name="complaints",
            field=models.BigIntegerField(db_default=0),
        ),
        migrations.AddField(
            model_name="campaigntotals",
            name="enrollments_active",
            field=models.BigIntegerField(db_default=0),
        ),
        migrations.AddField(
            model_name="campaigntotals",
            name="enrollments_completed",
            field=models.BigIntegerField(db_default=0),
        ),
        migrations.AddField(
            model_name="campaigntotals",
            name="enrollments_stopped",
            field=models.BigIntegerField(db_default=0),
        ),
        migrations.AddField(
            model_name="campaigntotals",
            name="sends",
            field=models.BigIntegerField(db_default=0),
        ),
        migrations.AddField(
            model_name="campaigntotals",
            name="unsubscribes",
            field=models.BigIntegerField(db_default=0),
        ),
        migrations.CreateModel(
            name="CampaignNumberDelta",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("enrollments_active", models.IntegerField(default=0)),
                ("enrollments_stopped", models.IntegerField(default=0)),
                ("enrollments_completed", models.IntegerField(default=0)),
                ("sends", models.IntegerField(default=0)),
                ("complaints", models.IntegerField(default=0)),
                ("unsubscribes", models.IntegerField(default=0)),
                (
                    "campaign",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="campaigns.campaign",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["campaign", "id"], name="rollups_numberdelta_tail")],
            },
        ),
    ]
