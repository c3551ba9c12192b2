"""Clicks: the EmailSend a campaign email's click came from (docs/email.md, "Tracked links").

A nullable column without a default is a catalogue change only; its partial index is built CONCURRENTLY,
as clicks take writes all the time, and holds only email clicks.
"""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("clicks", "0006_click_enrichment")]

    operations = [
        migrations.AddField(
            model_name="click",
            name="email_send_id",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        AddIndexConcurrently(
            model_name="click",
            index=models.Index(
                condition=models.Q(("email_send_id__isnull", False)),
                fields=["email_send_id"],
                name="clicks_click_email_send",
            ),
        ),
    ]
