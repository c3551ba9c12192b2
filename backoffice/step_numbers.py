"""A campaign page's per-step table: sent, unique clicks, click rate, leads, sales and net revenue from its email's links."""

from backoffice.funnel import step_name
from campaigns.models import Campaign, CampaignEmail
from conversions.step_numbers import campaign_step_numbers
from lftrack.currencies import amount_text


def step_numbers_context(campaign: Campaign) -> list[dict]:
    numbers = campaign_step_numbers(campaign=campaign)
    rows = []
    for step in CampaignEmail.objects.filter(campaign=campaign).order_by("position"):
        row = numbers.get(step.pk, {"sent": 0, "clicks": 0, "click_rate": 0.0, "leads": 0, "sales": 0, "revenue": []})
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
