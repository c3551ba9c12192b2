"""Count the conversions and refunds written before the triggers of 0011 into the contacts' totals, in batches of
BATCH contacts, each its own short transaction, so conversions and refunds go on meanwhile (docs/benchmarks.md,
"Contact totals").

Each batch locks its contacts' rows FOR UPDATE, in id order (a conversion naming one of them waits: the trigger of
conversions/0010 reads the contact FOR KEY SHARE), then their totals rows (a refund's trigger holding one is waited
for), and only then counts their rows from scratch and sets the totals to that count. Nobody can change those totals
between the count and its commit, and whatever committed before is in the count, the triggers' own additions
included: exact, and the same however often it runs, so a fill stopped halfway is simply run again. Contacts made
after their batch passed are counted by the triggers alone.
"""

from django.db import migrations, transaction

BATCH = 2000
BIGINT_MAX = "9223372036854775807"

LOCK_CUSTOMERS = "SELECT id FROM customers_customer WHERE id > %(after)s ORDER BY id LIMIT %(limit)s FOR UPDATE"
LOCK_TOTALS = """SELECT id FROM conversions_customertotals WHERE customer_id > %(after)s AND customer_id <= %(upto)s
    ORDER BY id FOR UPDATE"""
# The counts row ('') and a row per currency of the contact's sales, each refund counted against its sale's currency.
RECOUNT = f"""
INSERT INTO conversions_customertotals AS t (workspace_id, customer_id, currency, leads, sales, revenue_cents,
    refunded_cents)
SELECT MIN(e.workspace_id), e.customer_id, '', COUNT(*) FILTER (WHERE e.event = 'lead'),
    COUNT(*) FILTER (WHERE e.event = 'sale'), 0, 0
FROM conversions_conversionevent e WHERE e.customer_id > %(after)s AND e.customer_id <= %(upto)s GROUP BY e.customer_id
UNION ALL
SELECT MIN(e.workspace_id), e.customer_id, e.currency, 0, COUNT(*),
    LEAST(COALESCE(SUM(e.value_cents), 0), {BIGINT_MAX})::bigint,
    LEAST(COALESCE(SUM((SELECT SUM(r.amount_cents) FROM conversions_refund r WHERE r.conversion_id = e.id)), 0),
        {BIGINT_MAX})::bigint
FROM conversions_conversionevent e
WHERE e.customer_id > %(after)s AND e.customer_id <= %(upto)s AND e.event = 'sale' GROUP BY e.customer_id, e.currency
ON CONFLICT (customer_id, currency) DO UPDATE SET leads = excluded.leads, sales = excluded.sales,
    revenue_cents = excluded.revenue_cents, refunded_cents = excluded.refunded_cents
"""


def fill(apps, schema_editor):
    connection = schema_editor.connection
    after = 0
    while True:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute(LOCK_CUSTOMERS, {"after": after, "limit": BATCH})
            ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return
            cursor.execute(LOCK_TOTALS, {"after": after, "upto": ids[-1]})
            cursor.execute(RECOUNT, {"after": after, "upto": ids[-1]})
        after = ids[-1]


class Migration(migrations.Migration):
    atomic = False  # a transaction per batch, not one for the whole table

    dependencies = [("conversions", "0011_customer_totals")]

    # Back: nothing to undo (0011's reverse drops the table).
    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
