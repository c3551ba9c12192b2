"""A campaign page's per-step table: sent, unique clicks, click rate, leads, sales and net revenue from its email's links."""

from backoffice.funnel import step_name
from campaigns.models import Campaign, CampaignEmail
from conversions.step_numbers import campaign_step_numbers
from lftrack.currencies import amount_text


def step_numbers_context(campaign: Campaign, *, sent: dict[int, int]) -> list[dict]:
    """`sent`: each step's emails sent of all time, by position (the funnel's, backoffice/funnel.py)."""
    steps = list(CampaignEmail.objects.filter(campaign=campaign).order_by("position"))
    numbers = campaign_step_numbers(steps=steps, sent=sent)
    rows = []
    for step in steps:
        row = numbers[step.pk]
        rows.append(
            {
                "position": step.position,
                "name": step_name(step),
                "html": bool(step.html),
                **row,
                # Per currency, never added across currencies: "12.00 EUR, 5.00 USD".
                "net": ", ".join(amount_text(money["net_cents"], money["currency"]) for money in row["revenue"]),
            }
        )
    return rows
