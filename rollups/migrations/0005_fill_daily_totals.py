"""Fill the link and daily totals (0004) with the rows up to the current watermarks.

The watermark rows are locked meanwhile, so no roll-up runs in between: totals plus the rows above the
watermarks stay exact. Bot clicks and test-mode events are left out, as the roll-ups leave them out. Going
back resets the watermarks of clicks and events, so the next roll-up counts everything again.
"""

from django.db import migrations

MARK = "(SELECT COALESCE(MAX(last_id), 0) FROM rollups_watermark WHERE source = '{}')"
SALE_CURRENCY = "CASE WHEN event = 'sale' THEN currency ELSE '' END"


def fill(table: str, *, daily: bool) -> list[str]:
    """Clicks, then events, up to their watermarks, into `table`, per link (and UTC day) and currency."""
    keys = "link_id, day, currency" if daily else "link_id, currency"
    click_day = ", (created_at AT TIME ZONE 'UTC')::date" if daily else ""
    event_day = ", (occurred_at AT TIME ZONE 'UTC')::date" if daily else ""
    groups = "2, 3, 4" if daily else "2, 3"
    return [
        f"INSERT INTO {table} (workspace_id, {keys}, clicks)"
        f" SELECT MIN(workspace_id), link_id{click_day}, '', COUNT(*) FROM clicks_click"
        f" WHERE id <= {MARK.format('clicks_click')} AND NOT is_bot GROUP BY {groups}",
        f"INSERT INTO {table} (workspace_id, {keys}, leads, sales, revenue_cents)"
        f" SELECT MIN(workspace_id), link_id{event_day}, {SALE_CURRENCY}, COUNT(*) FILTER (WHERE event = 'lead'),"
        f" COUNT(*) FILTER (WHERE event = 'sale'), COALESCE(SUM(value_cents) FILTER (WHERE event = 'sale'), 0)"
        f" FROM conversions_conversionevent WHERE id <= {MARK.format('conversions_conversionevent')} AND NOT is_test"
        f" GROUP BY {groups}"
        f" ON CONFLICT ({keys}) DO UPDATE SET leads = excluded.leads, sales = excluded.sales,"
        f" revenue_cents = excluded.revenue_cents",
    ]


class Migration(migrations.Migration):
    dependencies = [("rollups", "0004_daily_totals")]

    operations = [
        migrations.RunSQL(
            [
                "SELECT 1 FROM rollups_watermark FOR UPDATE",
                *fill("rollups_linktotals", daily=False),
                *fill("rollups_dailytotals", daily=True),
            ],
            "UPDATE rollups_watermark SET last_id = 0, rolled_up_at = NULL"
            " WHERE source IN ('clicks_click', 'conversions_conversionevent')",
        ),
    ]
