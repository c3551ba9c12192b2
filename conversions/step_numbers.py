"""Campaign emails' numbers per step (and per broadcast): sent, unique clicks, click rate, and the leads and sales of those clicks."""

from campaigns.models import Broadcast, BroadcastLink, CampaignEmail, EmailLink
from clicks.models import Click
from conversions.models import ConversionEvent, Refund
from lftrack.db import sql_cursor

_LINKS, _CLICKS = EmailLink._meta.db_table, Click._meta.db_table
_BROADCAST_LINKS = BroadcastLink._meta.db_table
_EVENTS, _REFUNDS = ConversionEvent._meta.db_table, Refund._meta.db_table

# Both read from the steps' tracked links, never the campaign's sends: a link's clicks (clicks_click_link_tail) and
# conversions (conversions_event_link_tail) are a few percent of its emails, where the sends are millions. A click
# with a send id on a step's link is that step's: the token is signed for that link only (clicks/recipients.py).
_CLICKS_SQL = f"""
SELECT l.campaign_email_id AS step_id, COUNT(DISTINCT c.email_send_id) AS clicked
FROM {_LINKS} l JOIN {_CLICKS} c ON c.link_id = l.link_id
WHERE l.campaign_email_id = ANY(%(steps)s) AND c.email_send_id IS NOT NULL AND NOT c.is_bot
GROUP BY 1
"""
# Leads and sales posted with those clicks' ids (test mode left out), refunds netted per sale, per currency.
_CONVERSIONS_SQL = f"""
SELECT l.campaign_email_id AS step_id, e.event, CASE WHEN e.event = 'sale' THEN e.currency ELSE '' END AS currency,
       COUNT(*) AS events, COALESCE(SUM(e.value_cents), 0) AS gross,
       COALESCE(SUM((SELECT SUM(r.amount_cents) FROM {_REFUNDS} r WHERE r.conversion_id = e.id)), 0) AS refunded
FROM {_LINKS} l JOIN {_EVENTS} e ON e.link_id = l.link_id JOIN {_CLICKS} c ON c.id = e.click_id
WHERE l.campaign_email_id = ANY(%(steps)s) AND c.email_send_id IS NOT NULL AND NOT e.is_test
GROUP BY 1, 2, 3
"""


def campaign_step_numbers(*, steps: list[CampaignEmail], sent: dict[int, int]) -> dict[int, dict]:
    """For a campaign's `steps`, by step id: `sent` (all time, by position as the caller has it: the funnel's, rollups.selectors),
    `clicks` (sends clicked at least once by a person, not a bot), `click_rate` (a percentage of sent, one
    decimal), `leads`, `sales` and `revenue` (per currency: gross, refunded and net cents, never added across
    currencies). Opens are not tracked (docs/email.md, "What is not tracked")."""
    numbers: dict[int, dict] = {
        step.pk: {"sent": sent.get(step.position, 0), "clicks": 0, "click_rate": 0.0, "leads": 0, "sales": 0}
        | {"revenue": []}
        for step in steps
    }
    _fill(numbers, clicks_sql=_CLICKS_SQL, conversions_sql=_CONVERSIONS_SQL, param="steps")
    return numbers


# The same two reads for broadcasts, from their tracked links: a click with a broadcast recipient id on a
# broadcast's link is that broadcast's (the token is signed for that link only).
_BROADCAST_CLICKS_SQL = f"""
SELECT l.broadcast_id AS step_id, COUNT(DISTINCT c.broadcast_recipient_id) AS clicked
FROM {_BROADCAST_LINKS} l JOIN {_CLICKS} c ON c.link_id = l.link_id
WHERE l.broadcast_id = ANY(%(broadcasts)s) AND c.broadcast_recipient_id IS NOT NULL AND NOT c.is_bot
GROUP BY 1
"""
_BROADCAST_CONVERSIONS_SQL = f"""
SELECT l.broadcast_id AS step_id, e.event, CASE WHEN e.event = 'sale' THEN e.currency ELSE '' END AS currency,
       COUNT(*) AS events, COALESCE(SUM(e.value_cents), 0) AS gross,
       COALESCE(SUM((SELECT SUM(r.amount_cents) FROM {_REFUNDS} r WHERE r.conversion_id = e.id)), 0) AS refunded
FROM {_BROADCAST_LINKS} l JOIN {_EVENTS} e ON e.link_id = l.link_id JOIN {_CLICKS} c ON c.id = e.click_id
WHERE l.broadcast_id = ANY(%(broadcasts)s) AND c.broadcast_recipient_id IS NOT NULL AND NOT e.is_test
GROUP BY 1, 2, 3
"""


def broadcast_numbers(*, broadcasts: list[Broadcast], sent: dict[int, int]) -> dict[int, dict]:
    """campaign_step_numbers for broadcasts, by broadcast id; `sent` by broadcast id (its recipients sent)."""
    numbers: dict[int, dict] = {
        broadcast.pk: {"sent": sent.get(broadcast.pk, 0), "clicks": 0, "click_rate": 0.0, "leads": 0, "sales": 0}
        | {"revenue": []}
        for broadcast in broadcasts
    }
    _fill(numbers, clicks_sql=_BROADCAST_CLICKS_SQL, conversions_sql=_BROADCAST_CONVERSIONS_SQL, param="broadcasts")
    return numbers


def _fill(numbers: dict[int, dict], *, clicks_sql: str, conversions_sql: str, param: str) -> None:
    ids = list(numbers)
    with sql_cursor() as cursor:
        cursor.execute(clicks_sql, {param: ids})
        for row in cursor.fetchall():
            step = numbers[row.step_id]
            step["clicks"] = row.clicked
            step["click_rate"] = round(row.clicked * 100 / step["sent"], 1) if step["sent"] else 0.0
        cursor.execute(conversions_sql, {param: ids})
        rows = sorted(cursor.fetchall(), key=lambda row: (row.step_id, row.currency))
    for row in rows:
        step = numbers[row.step_id]
        if row.event == ConversionEvent.Event.LEAD:
            step["leads"] += row.events
            continue
        step["sales"] += row.events
        step["revenue"].append(
            {
                "currency": row.currency,
                "gross_cents": int(row.gross),
                "refunded_cents": int(row.refunded),
                "net_cents": int(row.gross - row.refunded),
            }
        )
