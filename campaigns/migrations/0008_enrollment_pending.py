"""Double opt-in: a `pending` enrollment state, its deadline, its confirmation email and the held name.

The state check is swapped without a long lock (NOT VALID, then VALIDATE, which lets writes go on),
and the partial index is built CONCURRENTLY: enrollments take writes all the time.
"""

from django.db import migrations, models

STATES = "ARRAY['pending'::text, 'active'::text, 'stopped'::text, 'completed'::text]"


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("campaigns", "0007_emailsend_reserved")]

    operations = [
        migrations.AddField(
            model_name="enrollment", name="confirm_by", field=models.DateTimeField(blank=True, null=True)
        ),
        migrations.AddField(
            model_name="enrollment", name="confirmation_sent_at", field=models.DateTimeField(blank=True, null=True)
        ),
        migrations.AddField(
            model_name="enrollment",
            name="held_name",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AlterField(
            model_name="enrollment",
            name="state",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("active", "Active"),
                    ("stopped", "Stopped"),
                    ("completed", "Completed"),
                ],
                default="active",
                max_length=10,
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="enrollment", name="campaigns_enrollment_state_valid"),
                migrations.AddConstraint(
                    model_name="enrollment",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("state__in", ["pending", "active", "stopped", "completed"])),
                        name="campaigns_enrollment_state_valid",
                    ),
                ),
                migrations.AddIndex(
                    model_name="enrollment",
                    index=models.Index(
                        condition=models.Q(("state", "pending")),
                        fields=["confirm_by"],
                        name="campaigns_enrollment_pending",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE campaigns_enrollment DROP CONSTRAINT campaigns_enrollment_state_valid;"
                    f" ALTER TABLE campaigns_enrollment ADD CONSTRAINT campaigns_enrollment_state_valid"
                    f" CHECK (state = ANY ({STATES})) NOT VALID;"
                    " ALTER TABLE campaigns_enrollment VALIDATE CONSTRAINT campaigns_enrollment_state_valid",
                    "ALTER TABLE campaigns_enrollment DROP CONSTRAINT campaigns_enrollment_state_valid;"
                    " ALTER TABLE campaigns_enrollment ADD CONSTRAINT campaigns_enrollment_state_valid"
                    " CHECK (state IN ('active', 'stopped', 'completed'))",
                ),
                migrations.RunSQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS campaigns_enrollment_pending"
                    " ON campaigns_enrollment (confirm_by) WHERE state = 'pending'",
                    "DROP INDEX CONCURRENTLY IF EXISTS campaigns_enrollment_pending",
                ),
            ],
        ),
    ]
