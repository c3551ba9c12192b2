"""An erased person's suppression (docs/privacy.md, "The suppression digest"): reason `erased`, and an enrollment
written for an erased contact by a request that matched them before the erasure committed is stopped as it is
written, its held name dropped (the sender would skip a contact without an address anyway)."""

from django.db import migrations, models

STOPPED = """
CREATE FUNCTION campaigns_enrollment_of_erased() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT erased_at FROM customers_customer WHERE id = NEW.customer_id FOR KEY SHARE) IS NOT NULL THEN
        NEW.state := 'stopped';
        NEW.stopped_at := now();
        NEW.next_send_at := NULL;
        NEW.held_name := '';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER campaigns_enrollment_of_erased BEFORE INSERT ON campaigns_enrollment
    FOR EACH ROW EXECUTE FUNCTION campaigns_enrollment_of_erased();
"""

UNSTOPPED = """
DROP TRIGGER IF EXISTS campaigns_enrollment_of_erased ON campaigns_enrollment;
DROP FUNCTION IF EXISTS campaigns_enrollment_of_erased();
"""


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0012_html_steps_and_email_links"), ("customers", "0007_customer_erasure")]

    operations = [
        migrations.RemoveConstraint(model_name="suppression", name="campaigns_suppression_reason_valid"),
        migrations.AddConstraint(
            model_name="suppression",
            constraint=models.CheckConstraint(
                condition=models.Q(reason__in=["unsubscribed", "bounced", "complained", "erased"]),
                name="campaigns_suppression_reason_valid",
            ),
        ),
        migrations.AlterField(
            model_name="suppression",
            name="reason",
            field=models.CharField(
                choices=[
                    ("unsubscribed", "Unsubscribed"),
                    ("bounced", "Bounced"),
                    ("complained", "Complained"),
                    ("erased", "Erased"),
                ],
                max_length=12,
            ),
        ),
        migrations.RunSQL(STOPPED, UNSTOPPED),
    ]
