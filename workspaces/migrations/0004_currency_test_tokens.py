"""A workspace's currency (USD for every workspace so far: a constant default, no rewrite) and test tokens."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0003_token_scopes"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="is_test",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="workspace",
            name="currency",
            field=models.CharField(db_default="USD", default="USD", max_length=3),
        ),
        migrations.AddConstraint(
            model_name="workspace",
            constraint=models.CheckConstraint(
                condition=models.Q(("currency__regex", "^[A-Z]{3}$")), name="workspaces_workspace_currency_code"
            ),
        ),
    ]
