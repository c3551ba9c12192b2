"""Retention (docs/privacy.md, "Retention"): how many days a workspace keeps its clicks and conversions; null keeps
them forever, as before (a nullable column: no table rewrite)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("workspaces", "0006_workspace_link_fallback_url")]

    operations = [
        migrations.AddField(
            model_name="workspace",
            name="retention_days",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name="workspace",
            constraint=models.CheckConstraint(
                condition=models.Q(retention_days__isnull=True)
                | models.Q(retention_days__gte=1, retention_days__lte=36500),
                name="workspaces_workspace_retention_bounded",
            ),
        ),
    ]
