"""A post's campaign moved to campaigns.CampaignPost (campaigns 0006 copies it first)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0003_click_tail_index"),
        ("campaigns", "0006_campaign_posts"),
    ]

    operations = [migrations.RemoveField(model_name="post", name="campaign")]
