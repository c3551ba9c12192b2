"""Totals per link and per campaign over append-only rows, and how far each source table is added in."""
from django.db import models


class Watermark(models.Model):
    """Rows of `source` (a table name) with id <= last_id are in the totals; the admin counts the rest live."""

    source = models.CharField(max_length=63, unique=True)
    last_id = models.BigIntegerField(default=0)
    rolled_up_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.source} <= {self.last_id}"


class LinkTotals(models.Model):
    """A link's clicks and conversion events up to the watermarks of clicks_click and conversions_conversionevent."""

    link = models.OneToOneField("clicks.Link", on_delete=models.CASCADE, primary_key=True, related_name="totals")
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    clicks = models.BigIntegerField(default=0)
    leads = models.BigIntegerField(default=0)
    sales = models.BigIntegerField(default=0)
    revenue_cents = models.BigIntegerField(default=0)


class CampaignTotals(models.Model):
    """A campaign's leads up to the watermark of campaigns_campaignlead."""

    campaign = models.OneToOneField(
        "campaigns.Campaign", on_delete=models.CASCADE, primary_key=True, related_name="totals"
    )
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    leads = models.BigIntegerField(default=0)
