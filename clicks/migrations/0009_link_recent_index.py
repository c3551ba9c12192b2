"""The links API's newest-first pages per workspace, built without holding writes to links (a rolling deploy's
older code still makes links: docs/deployment.md, "Migrations safe for the running code")."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("clicks", "0008_managed_links")]

    operations = [
        AddIndexConcurrently(
            model_name="link",
            index=models.Index(fields=["workspace", "-created_at", "-id"], name="clicks_link_recent"),
        ),
    ]
