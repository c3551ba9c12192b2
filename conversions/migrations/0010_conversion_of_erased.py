"""A conversion written for an erased contact, by a request that matched them before the erasure committed, is
counted without pointing to them and without what it says of them (docs/privacy.md, "Erasing a person"). The
lookup locks the contact's row FOR KEY SHARE, as the foreign key's check does: it waits for an erasure in
progress, then reads the erased row."""

from django.db import migrations

ANONYMOUS = """
CREATE FUNCTION conversions_event_of_erased() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT erased_at FROM customers_customer WHERE id = NEW.customer_id FOR KEY SHARE) IS NOT NULL THEN
        NEW.customer_id := NULL;
        NEW.meta := '{}'::jsonb;
        NEW.event_name := '';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER conversions_event_of_erased BEFORE INSERT ON conversions_conversionevent
    FOR EACH ROW WHEN (NEW.customer_id IS NOT NULL) EXECUTE FUNCTION conversions_event_of_erased();
"""

NAMED = """
DROP TRIGGER IF EXISTS conversions_event_of_erased ON conversions_conversionevent;
DROP FUNCTION IF EXISTS conversions_event_of_erased();
"""


class Migration(migrations.Migration):
    dependencies = [("conversions", "0009_idempotency_key_per_mode"), ("customers", "0007_customer_erasure")]

    operations = [migrations.RunSQL(ANONYMOUS, NAMED)]
