"""Erasing a person (docs/privacy.md, "Erasing a person"): `erased_at` (nullable, no rewrite), and triggers that
keep an erased contact's row empty whatever a request that read it before the erasure committed still writes.

A request that matched the person just before the erasure holds their old row in memory: its UPDATE of that row
(filling a blank name) is skipped, and an activity it logs for them keeps its kind and time only (dropping the row
would break the ORM's INSERT ... RETURNING of the request, a 500). The activity trigger locks the
contact's row FOR KEY SHARE, as the foreign key's check does, so it waits for an erasure in progress and then
reads the erased row (docs/concurrency.md, "Erasure against a conversion")."""

from django.db import migrations, models

FROZEN = """
CREATE FUNCTION customers_customer_erased_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RETURN NULL;
END $$;
CREATE TRIGGER customers_customer_erased_frozen BEFORE UPDATE ON customers_customer
    FOR EACH ROW WHEN (OLD.erased_at IS NOT NULL) EXECUTE FUNCTION customers_customer_erased_frozen();

CREATE FUNCTION customers_activity_of_erased() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT erased_at FROM customers_customer WHERE id = NEW.customer_id FOR KEY SHARE) IS NOT NULL THEN
        NEW.external_id := '';
        NEW.other_customer_id := NULL;
        NEW.detail := '{}'::jsonb;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER customers_activity_of_erased BEFORE INSERT ON customers_customeractivity
    FOR EACH ROW EXECUTE FUNCTION customers_activity_of_erased();
"""

UNFROZEN = """
DROP TRIGGER IF EXISTS customers_activity_of_erased ON customers_customeractivity;
DROP FUNCTION IF EXISTS customers_activity_of_erased();
DROP TRIGGER IF EXISTS customers_customer_erased_frozen ON customers_customer;
DROP FUNCTION IF EXISTS customers_customer_erased_frozen();
"""


class Migration(migrations.Migration):
    dependencies = [("customers", "0006_test_identity_space")]

    operations = [
        migrations.AddField(model_name="customer", name="erased_at", field=models.DateTimeField(blank=True, null=True)),
        migrations.RunSQL(FROZEN, UNFROZEN),
    ]
