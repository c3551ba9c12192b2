"""API tokens with scopes; existing tokens keep full access (an empty `scopes`). ADD COLUMN with a constant
default rewrites nothing."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0002_invitations"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scopes",
            field=models.CharField(blank=True, db_default="", default="", max_length=200),
        ),
    ]
