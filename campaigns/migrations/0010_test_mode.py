"""Test mode in campaigns: an enrollment carries its contact's mode, a suppression its own (unique per workspace,
address and mode), and a test contact's step is recorded as a `test` send. The columns have a constant default
(no rewrite); the suppressions' new unique constraint is built CONCURRENTLY before the old one goes."""

from django.db import migrations, models

ALTER = "ALTER TABLE campaigns_suppression"
BUILD = "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {} ON campaigns_suppression (workspace_id, email{})"


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("campaigns", "0009_provider_hooks")]

    operations = [
        migrations.AddField(
            model_name="enrollment",
            name="is_test",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="suppression",
            name="is_test",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AlterField(
            model_name="emailsend",
            name="status",
            field=models.CharField(
                choices=[("reserved", "Reserved"), ("sent", "Sent"), ("failed", "Failed"), ("test", "Test")],
                max_length=10,
            ),
        ),
        # NOT VALID, then validated in its own transaction: the sends table keeps taking sends meanwhile.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="emailsend",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("status", "test"), _negated=True),
                            ("complained_at__isnull", True),
                            _connector="OR",
                        ),
                        name="campaigns_emailsend_test_never_complained",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE campaigns_emailsend ADD CONSTRAINT campaigns_emailsend_test_never_complained"
                    " CHECK (status::text <> 'test' OR complained_at IS NULL) NOT VALID",
                    "ALTER TABLE campaigns_emailsend DROP CONSTRAINT campaigns_emailsend_test_never_complained",
                ),
                migrations.RunSQL(
                    "ALTER TABLE campaigns_emailsend VALIDATE CONSTRAINT campaigns_emailsend_test_never_complained",
                    migrations.RunSQL.noop,
                ),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="suppression", name="campaigns_suppression_one_per_email"),
                migrations.AddConstraint(
                    model_name="suppression",
                    constraint=models.UniqueConstraint(
                        fields=("workspace", "email", "is_test"), name="campaigns_suppression_one_per_email_and_mode"
                    ),
                ),
            ],
            database_operations=[
                # A unique constraint (not just an index): built as an index CONCURRENTLY, then attached.
                migrations.RunSQL(
                    [
                        BUILD.format("campaigns_suppression_one_per_email_and_mode", ", is_test"),
                        f"{ALTER} ADD CONSTRAINT campaigns_suppression_one_per_email_and_mode"
                        " UNIQUE USING INDEX campaigns_suppression_one_per_email_and_mode",
                        f"{ALTER} DROP CONSTRAINT campaigns_suppression_one_per_email",
                    ],
                    [
                        BUILD.format("campaigns_suppression_one_per_email", ""),
                        f"{ALTER} ADD CONSTRAINT campaigns_suppression_one_per_email"
                        " UNIQUE USING INDEX campaigns_suppression_one_per_email",
                        f"{ALTER} DROP CONSTRAINT campaigns_suppression_one_per_email_and_mode",
                    ],
                ),
            ],
        ),
    ]
