"""Campaigns own the link to their posts (CampaignPost, filled from clicks_post.campaign_id, which
clicks 0004 then drops) and keep the enrolling conversion as a plain id: no foreign key points from a
lower app to a higher one."""

import django.db.models.deletion
from django.db import migrations, models

COPY = """
INSERT INTO campaigns_campaignpost (workspace_id, campaign_id, post_id, created_at)
SELECT workspace_id, campaign_id, id, created_at FROM clicks_post WHERE campaign_id IS NOT NULL
"""
# Going back, clicks 0004 has put the column back (empty) before this runs.
COPY_BACK = """
UPDATE clicks_post SET campaign_id = cp.campaign_id FROM campaigns_campaignpost cp WHERE cp.post_id = clicks_post.id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0005_lead_tail_index"),
        ("clicks", "0003_click_tail_index"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="CampaignPost",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "campaign",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="campaign_posts",
                        to="campaigns.campaign",
                    ),
                ),
                (
                    "post",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="campaign_post", to="clicks.post"
                    ),
                ),
                (
                    "workspace",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="workspaces.workspace"
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["campaign", "post"], name="campaigns_campaignpost_by_camp")],
            },
        ),
        migrations.RunSQL(COPY, COPY_BACK),
        # The foreign-key constraint goes; the column and its index stay, under a plain integer field.
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterField(
                    model_name="campaignlead",
                    name="conversion",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        db_constraint=False,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="conversions.conversionevent",
                    ),
                ),
            ],
            state_operations=[
                migrations.RemoveField(model_name="campaignlead", name="conversion"),
                migrations.AddField(
                    model_name="campaignlead",
                    name="conversion_id",
                    field=models.BigIntegerField(blank=True, db_index=True, null=True),
                ),
            ],
        ),
    ]
