"""Campaign emails' numbers per step: sent, unique clicks, click rate, and the leads and sales of those clicks."""

from collections import defaultdict

from django.db import connection

from campaigns.models import Campaign, EmailSend
from clicks.models import Click
from conversions.models import ConversionEvent, Refund

_SENDS, _CLICKS = EmailSend._meta.db_table, Click._meta.db_table
_EVENTS, _REFUNDS = ConversionEvent._meta.db_table, Refund._meta.db_table

# Sends of the campaign (its (campaign, sent_at) index) and their human clicks (clicks_click_email_send); a test
# contact's steps are `test` sends, mailed to nobody: not counted.
_CLICKS_SQL = f"""
SELECT s.campaign_email_id, COUNT(*) FILTER (WHERE s.status = 'sent'),
       COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM {_CLICKS} c WHERE c.email_send_id = s.id AND NOT c.is_bot))
FROM {_SENDS} s WHERE s.campaign_id = %(campaign)s AND s.status <> 'test' AND s.campaign_email_id IS NOT NULL
GROUP BY 1
"""
# The conversions credited to those clicks, live rows (a lead or sale names its click), refunds netted per sale.
_CONVERSIONS_SQL = f"""
SELECT s.campaign_email_id, e.event, CASE WHEN e.event = 'sale' THEN e.currency ELSE '' END, COUNT(*),
       COALESCE(SUM(e.value_cents), 0),
       COALESCE(SUM((SELECT SUM(r.amount_cents) FROM {_REFUNDS} r WHERE r.conversion_id = e.id)), 0)
FROM {_SENDS} s JOIN {_CLICKS} c ON c.email_send_id = s.id JOIN {_EVENTS} e ON e.click_id = c.id
WHERE s.campaign_id = %(campaign)s AND s.campaign_email_id IS NOT NULL AND NOT e.is_test
GROUP BY 1, 2, 3
"""


def campaign_step_numbers(*, campaign: Campaign) -> dict[int, dict]:
    """By step id: `sent`, `clicks` (sends clicked at least once by a person, not a bot), `click_rate` (a
    percentage of sent, one decimal), `leads`, `sales` and `revenue` (per currency: gross, refunded and net
    cents, never added across currencies). Opens are not tracked (docs/email.md, "What is not tracked")."""
    numbers: dict[int, dict] = defaultdict(
        lambda: {"sent": 0, "clicks": 0, "click_rate": 0.0, "leads": 0, "sales": 0, "revenue": []}
    )
    with connection.cursor() as cursor:
        cursor.execute(_CLICKS_SQL, {"campaign": campaign.pk})
        for step_id, sent, clicked in cursor.fetchall():
            numbers[step_id].update(
                sent=sent, clicks=clicked, click_rate=round(clicked * 100 / sent, 1) if sent else 0.0
            )
        cursor.execute(_CONVERSIONS_SQL, {"campaign": campaign.pk})
        rows = sorted(cursor.fetchall(), key=lambda row: (row[0], row[2]))
    for step_id, event, currency, count, gross, refunded in rows:
        step = numbers[step_id]
        if event == ConversionEvent.Event.LEAD:
            step["leads"] += count
            continue
        step["sales"] += count
        step["revenue"].append(
            {
                "currency": currency,
                "gross_cents": int(gross),
                "refunded_cents": int(refunded),
                "net_cents": int(gross - refunded),
            }
        )
    return dict(numbers)
