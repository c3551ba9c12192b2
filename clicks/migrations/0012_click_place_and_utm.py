"""Clicks carry their country and city (clicks/geo.py) and their link's UTM source, medium and campaign; with a constant
default, so ADD COLUMN rewrites nothing, however many clicks there are."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0011_click_broadcast_recipient"),
    ]

    operations = [
        migrations.AddField(
            model_name="click",
            name="city",
            field=models.CharField(blank=True, db_default="", default="", max_length=200),
        ),
        migrations.AddField(
            model_name="click",
            name="country",
            field=models.CharField(blank=True, db_default="", default="", max_length=2),
        ),
        migrations.AddField(
            model_name="click",
            name="utm_campaign",
            field=models.CharField(blank=True, db_default="", default="", max_length=200),
        ),
        migrations.AddField(
            model_name="click",
            name="utm_medium",
            field=models.CharField(blank=True, db_default="", default="", max_length=200),
        ),
        migrations.AddField(
            model_name="click",
            name="utm_source",
            field=models.CharField(blank=True, db_default="", default="", max_length=200),
        ),
    ]
