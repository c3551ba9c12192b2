"""Clicks carry device type, browser, OS and referrer domain (clicks/agents.py); ADD COLUMN with a
constant default rewrites nothing, however many clicks there are."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0005_click_is_bot"),
    ]

    operations = [
        migrations.AddField(
            model_name="click",
            name="browser",
            field=models.CharField(blank=True, db_default="", default="", max_length=50),
        ),
        migrations.AddField(
            model_name="click",
            name="device",
            field=models.CharField(blank=True, db_default="", default="", max_length=10),
        ),
        migrations.AddField(
            model_name="click",
            name="os",
            field=models.CharField(blank=True, db_default="", default="", max_length=50),
        ),
        migrations.AddField(
            model_name="click",
            name="referrer_domain",
            field=models.CharField(blank=True, db_default="", default="", max_length=255),
        ),
    ]
