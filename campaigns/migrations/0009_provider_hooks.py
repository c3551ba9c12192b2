"""Email providers' webhooks: a credential per workspace, and the sends found by Message-ID.

The index is built CONCURRENTLY: the sends table takes writes all the time.
"""

import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("campaigns", "0008_enrollment_pending"),
        ("workspaces", "0002_invitations"),
    ]

    operations = [
        migrations.CreateModel(
            name="ProviderHook",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("digest", models.CharField(max_length=64)),
                ("signing_keys", models.JSONField(blank=True, default=dict)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "workspace",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="workspaces.workspace"
                    ),
                ),
            ],
        ),
        AddIndexConcurrently(
            model_name="emailsend",
            index=models.Index(
                condition=models.Q(("message_id", ""), _negated=True),
                fields=["workspace", "message_id"],
                name="campaigns_emailsend_message",
            ),
        ),
    ]
